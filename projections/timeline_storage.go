// The timeline's storage: entries in chunks, payloads in slabs, one copy
// of each head, and what an entry is indexed by.

package projections

import (
	"slices"
	"sort"
	"time"

	"meshplane/events"
)

// chunkSize is how many entries one chunk of the timeline holds.
const chunkSize = 4096

// entry is what the timeline keeps of one event: the envelope's fields it
// shows, and the payload.
type entry struct {
	position uint64
	// at is the event's time in Unix nanoseconds, which it is exactly
	// (time.Unix(0, at).UTC()) for every event a store decodes: 16 bytes
	// fewer an entry than a time.Time. A time it is not (another zone, a
	// monotonic reading, a year out of nanos' range) is kept whole in the
	// entry's head (tlHead.odd). Read it with time().
	at int64
	// The rest, which a node's run of quiet passes shares (the timeline
	// keeps one tail for the run: Timeline.tail): what an entry keeps of
	// its own is 24 bytes.
	*tlTail
}

// tlTail is the part of an entry that a node's entries in a row often
// share (see entry). Never modified once its entry is folded.
type tlTail struct {
	// The stream, type, actor and node, which a few hundred entries share
	// (a node's reports, say), one copy for all of them.
	*tlHead
	correlation       string
	decl              *tlDecl // the declaration a composed, pushed or apply event is about, when known
	roster, resources int32   // counts of a composed declaration
	// p is the payload, as decoded but for two types, kept as pointers
	// into the timeline's slabs: a *DeclarationComposed (without roster,
	// resources or specs) and a *tlApply (resolved, see Reports; applyOf
	// reads it). Never modified once folded.
	p events.Payload
}

// same reports whether a and b are the same tail: only apply entries'
// share one (their payload the same *tlApply), since a payload of another
// type need not be comparable.
func (a *tlTail) same(b *tlTail) bool {
	x, ok := a.p.(*tlApply)
	y, ok2 := b.p.(*tlApply)
	return ok && ok2 && x == y && a.tlHead == b.tlHead && a.correlation == b.correlation && a.decl == b.decl &&
		a.roster == b.roster && a.resources == b.resources
}

// entryMaxAt is the maxAt of entry i: the latest time (nanos) of it and
// every entry before it, which ascends (walk's binary search reads it).
func (t *Timeline) entryMaxAt(i int) int64 {
	if m, ok := t.behind[int32(i)]; ok {
		return m
	}
	return t.at(i).at
}

// slab keeps values in chunks and hands out pointers to them, which stay
// valid: a million payloads cost a few hundred allocations, not a million.
type slab[T any] struct{ chunks [][]T }

// slabChunk is how many values one chunk of a slab holds.
const slabChunk = 1024

func (s *slab[T]) add(v T) *T {
	if n := len(s.chunks); n == 0 || len(s.chunks[n-1]) == slabChunk {
		s.chunks = append(s.chunks, make([]T, 0, slabChunk))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, v)
	return &(*c)[len(*c)-1]
}

func (t *Timeline) at(i int) *entry { return &t.chunks[i/chunkSize][i%chunkSize] }

// nodeAt finds node's entry at position: its node index, the entry's
// place in it, and ok false when node has none there. t.mu is held.
func (t *Timeline) nodeAt(node string, position uint64) (idx []int32, k int, ok bool) {
	idx = t.byNode[node]
	k = sort.Search(len(idx), func(k int) bool { return t.at(int(idx[k])).position >= position })
	return idx, k, k < len(idx) && t.at(int(idx[k])).position == position
}

func (t *Timeline) push(e entry) {
	if t.n%chunkSize == 0 {
		t.chunks = append(t.chunks, make([]entry, 0, chunkSize))
	}
	c := &t.chunks[len(t.chunks)-1]
	*c = append(*c, e)
	t.n++
}

// tlHead is the part of an entry that many share (see entry); odd is the
// entry's time when its nanoseconds do not say it exactly (then the head
// is the entry's own).
type tlHead struct {
	stream, typ, actor, node string
	odd                      *time.Time
}

// stamp sets e's time to at, and returns at to keep in e's head when e's
// nanoseconds do not say it exactly (nil when they do).
func stamp(e *entry, at time.Time) *time.Time {
	e.at = nanos(at)
	if time.Unix(0, e.at).UTC() == at {
		return nil
	}
	odd := new(time.Time)
	*odd = at
	return odd
}

// newHead is a copy of h on the heap.
func newHead(h tlHead) *tlHead {
	x := new(tlHead)
	*x = h
	return x
}

// time is the entry's time, as its event had it.
func (e *entry) time() time.Time {
	if e.odd != nil {
		return *e.odd
	}
	return time.Unix(0, e.at).UTC()
}

// head returns the timeline's one copy of h.
func (t *Timeline) head(h tlHead) *tlHead {
	if x, ok := t.heads[h]; ok {
		return x
	}
	x := newHead(h)
	t.heads[h] = x
	return x
}

// tlApply is what the timeline keeps of a resolved apply report. Nine in
// ten reports created, updated, replaced, removed and failed nothing: those
// keep their names, counts and held list here, some 120 bytes instead of
// the report's 288 (a hundred megabytes of a million events' timeline,
// which every collection marked). The others keep the whole report too,
// and whether it was heavy (only they can be).
type tlApply struct {
	node, declaration, digest string // the entry's and its declaration's copies where equal
	held                      []events.Held
	sent, applied, unchanged  int
	full                      *tlFull // when any list but held is not empty
	// digestFilled says the report gave no digest and the resolver filled
	// it in (from the node's previous report): TakeKeys keeps it then.
	digestFilled bool
	heldPos      uint64 // a compact report's: where its held list was carried in full, 0 if not known
	heldUnknown  bool   // a compact report whose held_since names no held list (ErrHoldsUnknown)
}

// tlFull is a whole apply report, and whether it was a heavy pass
// (events.Heavy, weighed when it was folded: the retry exception depends on
// the apply before it).
type tlFull struct {
	events.ApplyReported
	heavy bool
}

func compactApply(a *events.ApplyReported, heavy bool) tlApply {
	c := tlApply{
		node: a.Node, declaration: a.Declaration, digest: a.Digest, held: a.Held,
		sent: a.Sent, applied: a.Applied, unchanged: a.Unchanged,
	}
	if len(a.Created) > 0 || len(a.Updated) > 0 || len(a.Replaced) > 0 || len(a.Removed) > 0 || len(a.Failed) > 0 {
		c.full = &tlFull{ApplyReported: *a, heavy: heavy}
	}
	return c
}

// same reports whether a and b, neither with a full report, stand for
// the same resolved report (the timeline then keeps one for both).
func (a *tlApply) same(b *tlApply) bool {
	return a.full == nil && b.full == nil && a.node == b.node && a.declaration == b.declaration &&
		a.digest == b.digest && slices.Equal(a.held, b.held) && a.sent == b.sent && a.applied == b.applied &&
		a.unchanged == b.unchanged && a.digestFilled == b.digestFilled && a.heldPos == b.heldPos &&
		a.heldUnknown == b.heldUnknown
}

// heavy reports whether the apply was a heavy pass.
func (a *tlApply) heavy() bool { return a.full != nil && a.full.heavy }

// EventType makes a *tlApply an entry's payload, as the report was.
func (*tlApply) EventType() string { return events.TypeApplyReported }

// report is the resolved report a stands for (a quiet one without its
// apply id, which the timeline does not show).
func (a *tlApply) report() *events.ApplyReported {
	if a.full != nil {
		return &a.full.ApplyReported
	}
	return &events.ApplyReported{
		Node: a.node, Declaration: a.declaration, Digest: a.digest, Held: a.held,
		Sent: a.sent, Applied: a.applied, Unchanged: a.unchanged,
	}
}

// applyOf is the resolved report of an apply entry.
func applyOf(e *entry) (*events.ApplyReported, bool) {
	a, ok := e.p.(*tlApply)
	if !ok {
		return nil, false
	}
	return a.report(), true
}

// tlDecl is what the timeline keeps of a composed declaration. Resources
// slices are shared with the node's previous declaration when equal.
type tlDecl struct {
	id        string // the declaration's id; "" when loaded from a snapshot
	position  uint64 // of its composed event (EntryFold.Decl)
	digest    string
	resources []events.ResourceRef
	modules   []string // distinct, sorted
}

// mods is d's modules, none if d is nil.
func (d *tlDecl) mods() []string {
	if d == nil {
		return nil
	}
	return d.modules
}

// quiet reports whether apply a touched nothing at all (it held nothing
// either): touched(a) and applyModules(a, …) are then empty.
func quiet(a *events.ApplyReported) bool {
	return len(a.Created) == 0 && len(a.Updated) == 0 && len(a.Replaced) == 0 &&
		len(a.Removed) == 0 && len(a.Held) == 0 && len(a.Failed) == 0
}

// touched lists, sorted and distinct, the resources an apply entry touched.
func touched(a *events.ApplyReported) []string {
	var out []string
	out = append(out, a.Created...)
	for _, r := range a.Updated {
		out = append(out, r.Name)
	}
	for _, r := range a.Replaced {
		out = append(out, r.Name)
	}
	out = append(out, a.Removed...)
	for _, h := range a.Held {
		out = append(out, h.Name)
	}
	for _, f := range a.Failed {
		out = append(out, f.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// modules lists, sorted and distinct, the modules an entry concerns.
func modules(e *entry) []string {
	switch v := e.p.(type) {
	case events.ModuleDefined:
		return []string{v.Module}
	case events.ModuleAssigned:
		return []string{v.Module}
	case events.ModuleReleased:
		return []string{v.Module}
	case events.ModuleTaken:
		return []string{v.Module}
	case events.ArtifactRecorded:
		return []string{v.Module}
	case events.ModuleDeployed:
		return []string{v.Module}
	case events.ModuleRemoved:
		return []string{v.Module}
	case events.NodeRemoved:
		return v.Drained
	case events.RolloutFailed:
		return []string{v.Module}
	case *events.DeclarationComposed, events.DeclarationPushed:
		return e.decl.mods()
	case *tlApply:
		a := v.report()
		if e.decl == nil {
			return applyModules(a, nil, nil)
		}
		return applyModules(a, e.decl, touched(a))
	}
	return nil
}

// applyModules lists, sorted and distinct, the modules of what apply a
// held and, where its declaration d is known, of the resources of d it
// touched (names: touched(a)).
func applyModules(a *events.ApplyReported, d *tlDecl, names []string) []string {
	var out []string
	for _, h := range a.Held {
		out = insertSorted(out, h.Module)
	}
	if d != nil {
		for _, r := range d.resources {
			if _, ok := slices.BinarySearch(names, r.Name); ok {
				out = insertSorted(out, r.Module)
			}
		}
	}
	return out
}
