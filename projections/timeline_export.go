// The timeline's records: every entry as JSON, and the keys of the entries
// a TimelineDB takes out of memory, from which ShowEvent renders an entry
// again out of its stored event.

package projections

import (
	"slices"
	"time"

	"meshplane/events"
)

// MarshalJSON writes every entry, in position order.
func (t *Timeline) MarshalJSON() ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Entry, 0, t.n+t.runs.members)
	if err := t.walk(Filter{Forward: true}, func(e *entry) bool {
		out = append(out, show(e))
		return true
	}); err != nil {
		return nil, err
	}
	return marshal(out)
}

// EntryKeys is what a timeline kept outside memory stores of an entry (see
// TakeKeys): its position and time, the names it is found by (Filter's
// node, type, modules and the resources an apply touched, as Entry has
// them), and the little of the fold its rendering needs (Fold). The rest of
// the entry is its event's, which the store holds: ShowEvent renders it
// from the event again.
type EntryKeys struct {
	Position  uint64
	At        time.Time
	Node      string
	Type      string
	Modules   []string
	Resources []string
	Fold      EntryFold
}

// EntryFold is what the fold knew of an entry that its event does not say.
type EntryFold struct {
	// Decl is the position of the composed event of the declaration a
	// pushed or apply entry is about (its node's latest composed of that
	// id when folded); 0 when none was known.
	Decl uint64
	// Held is the position of the report that carried in full the held
	// list a compact report names (HeldSince), when the fold knew it; 0
	// otherwise (ShowEvent's caller then finds it through the id index).
	Held uint64
	// Heavy says an apply was a heavy pass (rule 7, weighed against the
	// apply before it).
	Heavy bool
	// Digest is an apply report's digest resolved from the node's previous
	// report when the report gave none and the declaration's own digest is
	// another; "" otherwise (rare: a report written by hand).
	Digest string
}

// TakeKeys returns the keys of every entry the timeline holds and forgets
// the entries, keeping what it needs to fold on (declarations, the report
// resolver, the count and time order): a TimelineDB writes them out.
// Queries of the timeline itself then see only the entries folded since.
// The entries of runs are read back from the store (an error is
// ErrRunRead's, and the timeline then forgets nothing).
func (t *Timeline) TakeKeys() ([]EntryKeys, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]EntryKeys, 0, t.n+t.runs.members)
	if err := t.walk(Filter{Forward: true}, func(e *entry) bool {
		out = append(out, keysOf(e))
		return true
	}); err != nil {
		return nil, err
	}
	t.flushed += t.n + t.runs.members
	t.chunks, t.n = nil, 0
	t.runs = tlRuns{read: t.runs.read}
	t.composed, t.applies = slab[events.DeclarationComposed]{}, slab[tlApply]{}
	t.byNode = map[string][]int32{}
	t.byType = map[string][]int32{}
	t.byModule = map[string][]int32{}
	t.byResource = map[string][]int32{}
	t.heads = map[tlHead]*tlHead{}
	t.prev = map[string]*tlPrev{}
	t.behind = map[int32]int64{}
	return out, nil
}

// keysOf is e's EntryKeys.
func keysOf(e *entry) EntryKeys {
	k := EntryKeys{Position: e.position, At: e.time(), Node: e.node, Type: e.typ, Modules: modules(e)}
	switch v := e.p.(type) {
	case events.DeclarationPushed:
		if e.decl != nil {
			k.Fold.Decl = e.decl.position
		}
	case *tlApply:
		if e.decl != nil {
			k.Fold.Decl = e.decl.position
		}
		k.Fold.Heavy, k.Fold.Held = v.heavy(), v.heldPos
		a := v.report()
		if !quiet(a) {
			k.Resources = touched(a)
		}
		if v.digestFilled {
			shown := ""
			if e.decl != nil {
				shown = e.decl.digest
			}
			if a.Digest != shown {
				k.Fold.Digest = a.Digest
			}
		}
	}
	return k
}

// ShowEvent renders the entry of ev, whose payload p the registry decoded,
// as Query shows it (without churn marks: Marked adds them), from what the
// fold kept of it (fold, from TakeKeys) and, for a pushed or apply entry:
// decl, the payload of the composed event at fold.Decl (nil when it is 0),
// and held, the held list a compact report's HeldSince names (that of the
// report at fold.Held, or events.HeldOf; nil when it names none: the
// entry's holds are then unknown, as the fold had them). An entry read
// back so is the entry that was folded.
func ShowEvent(ev events.Event, p events.Payload, fold EntryFold, decl *events.DeclarationComposed, held []events.Held) Entry {
	e := entry{
		position: ev.Position,
		tlTail:   &tlTail{tlHead: &tlHead{stream: ev.Stream, typ: ev.Type, actor: ev.Actor, node: nodeOf(ev, p)}, correlation: ev.Correlation, p: p},
	}
	e.odd = stamp(&e, ev.At)
	var d *tlDecl
	if decl != nil {
		d = declOf(decl, fold.Decl)
	}
	switch v := p.(type) {
	case events.DeclarationComposed:
		e.decl, e.roster, e.resources = declOf(&v, ev.Position), int32(len(v.Roster)), int32(len(v.Resources))
		v.Roster, v.Resources, v.Specs = nil, nil, nil
		e.p = &v
	case events.DeclarationPushed:
		e.decl = d
	case events.ApplyReported:
		unknown := v.HeldSince != "" && held == nil
		if v.HeldSince != "" {
			v.Held, v.HeldSince = held, ""
		}
		if fold.Digest != "" && v.Digest == "" {
			v.Digest = fold.Digest
		}
		e.decl = d
		c := compactApply(&v, fold.Heavy)
		c.heldPos, c.heldUnknown = fold.Held, unknown
		e.p = &c
	}
	return show(&e)
}

// declOf is the timeline's record of the declaration v composed, at
// position.
func declOf(v *events.DeclarationComposed, position uint64) *tlDecl {
	d := &tlDecl{id: v.Declaration, digest: v.Digest, resources: v.Resources, position: position}
	for _, r := range v.Resources {
		d.modules = insertSorted(d.modules, r.Module)
	}
	return d
}

// NamesOf are the names en is found by in each index (node, type, module,
// resource), each once: those of its EntryKeys.
func NamesOf(k EntryKeys) [4][]string {
	var out [4][]string
	for i, names := range [][]string{{k.Node}, {k.Type}, k.Modules, k.Resources} {
		for _, n := range names {
			if n != "" && !slices.Contains(out[i], n) {
				out[i] = append(out[i], n)
			}
		}
	}
	return out
}
