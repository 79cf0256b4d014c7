package replay

import (
	"context"
	"encoding/json"
	"slices"

	"meshplane/events"
)

// nodePass is what one node's pass did in one run: its compose (or
// failed compose), its send, its apply.
type nodePass struct {
	composed   *events.DeclarationComposed
	prev       *events.DeclarationComposed // the node's declaration before it, in the same run
	failed     *events.DeclarationComposeFailed
	pushed     bool
	pushFailed *events.DeclarationPushFailed
	apply      *events.ApplyReported // held resolved
}

// facts reads one run's events in order, round by round, and keeps what
// a later round needs of earlier ones: every declaration, every resource
// spec by digest, every held list by apply id.
type facts struct {
	reg   *events.Registry
	decls map[string]*events.DeclarationComposed // declaration id → its compose
	last  map[string]*events.DeclarationComposed // node → its latest compose
	specs map[string]json.RawMessage             // resource digest → spec
	held  map[string][]events.Held               // apply id → its held list
	// applies is every apply folded, held resolved, by apply id: a pass
	// compares the applies that ran in it, wherever their reports were
	// delivered (settle).
	applies map[string]*events.ApplyReported
	// roster folds the run's roster.changed, to give a compose that names
	// a roster revision its names (the runs are folded from their start).
	roster *events.RosterBook
	// res resolves a compose stored by reference (resources_since) to
	// its resources, likewise.
	res *events.ResourceBook
	// Totals of the run so far.
	totals Totals
}

func newFacts(reg *events.Registry) *facts {
	return &facts{
		reg: reg, decls: map[string]*events.DeclarationComposed{}, last: map[string]*events.DeclarationComposed{},
		specs: map[string]json.RawMessage{}, held: map[string][]events.Held{},
		applies: map[string]*events.ApplyReported{},
		roster:  events.NewRosterBook(reg, nil), res: events.NewResourceBook(reg, nil),
	}
}

// pass folds one round's events and returns what each node did in it.
// An event that does not decode is passed over (it is in both runs or in
// neither; the recorded one was let in by the door).
func (f *facts) pass(evs []events.Event) map[string]*nodePass {
	out := map[string]*nodePass{}
	np := func(node string) *nodePass {
		if out[node] == nil {
			out[node] = &nodePass{}
		}
		return out[node]
	}
	for _, ev := range evs {
		node := nodeOf(ev)
		switch ev.Type {
		case events.TypeRosterChanged:
			if v, err := events.DecodeAs[events.RosterChanged](f.reg, ev); err == nil && ev.Stream == events.RosterStream {
				f.roster.Fold(v)
			}
		case events.TypeDeclarationComposed:
			v, err := events.DecodeAs[events.DeclarationComposed](f.reg, ev)
			if err == nil {
				v, err = f.roster.Resolve(context.Background(), v)
			}
			if err == nil {
				v, err = f.res.Resolve(context.Background(), ev, v)
			}
			if err != nil {
				continue
			}
			for d, s := range v.Specs {
				f.specs[d] = s
			}
			p := np(node)
			p.prev, p.composed = f.last[node], &v
			f.decls[v.Declaration], f.last[node] = &v, &v
			f.totals.Composed++
		case events.TypeDeclarationComposeFailed:
			v, err := events.DecodeAs[events.DeclarationComposeFailed](f.reg, ev)
			if err != nil {
				continue
			}
			np(node).failed = &v
			f.totals.ComposeFailed++
		case events.TypeDeclarationPushed:
			np(node).pushed = true
		case events.TypeDeclarationPushFailed:
			v, err := events.DecodeAs[events.DeclarationPushFailed](f.reg, ev)
			if err != nil {
				continue
			}
			np(node).pushFailed = &v
			f.totals.PushFailed++
		case events.TypeApplyReported:
			v, err := events.DecodeAs[events.ApplyReported](f.reg, ev)
			if err != nil {
				continue
			}
			id := v.ApplyID
			if id == "" {
				id = ev.ID.String()
			}
			if v.HeldSince != "" && len(v.Held) == 0 {
				v.Held = f.held[v.HeldSince]
			}
			f.held[id] = v.Held
			np(node).apply = &v
			f.applies[id] = &v
			f.totals.Applies++
			f.totals.Created += len(v.Created)
			f.totals.Replaced += len(v.Replaced)
			f.totals.Removed += len(v.Removed)
			if len(v.Replaced) > 0 {
				f.totals.ReplacingPasses++
			}
		}
	}
	return out
}

// settle sets each node's apply in passes to the last of the applies that
// ran in the pass (ran: node → apply ids, in order), folded in any pass,
// or to none when none of them was delivered: a report kept in an outbox
// is delivered in a later pass than the one its apply ran in, and a pass
// may deliver an earlier pass's.
func (f *facts) settle(passes map[string]*nodePass, ran map[string][]string) {
	for n, p := range passes {
		if len(ran[n]) == 0 {
			p.apply = nil
		}
	}
	for n, ids := range ran {
		var a *events.ApplyReported
		for _, id := range ids {
			if v := f.applies[id]; v != nil {
				a = v
			}
		}
		if passes[n] == nil {
			passes[n] = &nodePass{}
		}
		passes[n].apply = a
	}
}

// kinds maps each resource of d to its kind.
func kinds(d *events.DeclarationComposed) map[string]string {
	out := map[string]string{}
	if d == nil {
		return out
	}
	for _, r := range d.Resources {
		out[r.Name] = r.Kind
	}
	return out
}

// digests maps each resource of d to its digest.
func digests(d *events.DeclarationComposed) map[string]string {
	out := map[string]string{}
	if d == nil {
		return out
	}
	for _, r := range d.Resources {
		out[r.Name] = r.Digest
	}
	return out
}

// changedSince lists the resources of d whose digest differs from (or is
// absent in) prev, sorted; and the roster names d gained and lost.
func changedSince(prev, d *events.DeclarationComposed) (changed, gained, lost []string) {
	before := digests(prev)
	for _, r := range d.Resources {
		if before[r.Name] != r.Digest {
			changed = append(changed, r.Name)
		}
	}
	var old []string
	if prev != nil {
		old = prev.Roster
	}
	gained, lost = setDiff(d.Roster, old), setDiff(old, d.Roster)
	return changed, gained, lost
}

// setDiff lists what a holds and b does not, sorted.
func setDiff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// specFields lists the top-level fields in which two resource specs
// (their JSON) differ, sorted; nil when either is unknown.
func specFields(a, b json.RawMessage) []string {
	if a == nil || b == nil {
		return nil
	}
	var x, y map[string]json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return nil
	}
	var out []string
	for k, v := range x {
		if w, ok := y[k]; !ok || !jsonEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
