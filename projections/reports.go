package projections

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"meshplane/events"
)

// ErrUnresolved means a compact apply report names, in HeldSince, a report
// this resolver has not seen carry a held list and its lookup (SetLookup)
// did not find either: the stream lacks it, or the resolver has no lookup.
var ErrUnresolved = errors.New("apply report refers to a report not seen")

// ErrHoldsUnknown means a compact apply report's HeldSince names nothing
// the store holds a held list under (events.ErrHeldUnresolved from the
// lookup: a random id, another node's report, one that held nothing, not
// an id at all): history written past the door (issue 31), by an older
// build or a hand. It is no failure of the fold: the report is folded with
// its holds unknown (an empty held list), and the projections that show
// holds say so (ApplyRecord.HoldsUnknown, Entry.HoldsUnknown). Only the
// door is strict; a read never dies on a value it can describe.
var ErrHoldsUnknown = errors.New("held_since names no held list: the apply's holds are unknown")

// HoldsUnknownNote is what a surface that shows holds says of an apply
// whose holds are unknown (ErrHoldsUnknown).
const HoldsUnknownNote = "holds unknown: its held_since names no held list"

// HeldLookup finds the held list that HeldSince names: that of the apply
// report appended on stream under the apply id (events.HeldOf, through the
// store's id index). An error wrapping events.ErrHeldUnresolved says the
// stream holds no such report; any other is a failed read.
type HeldLookup func(stream, applyID string) ([]events.Held, error)

// Reports resolves compact apply reports (see events.ApplyReported) into the
// full form they stand for, so a projection folds the same report whether
// the stream holds it compact or full:
//
//   - HeldSince: Held is the held list of the named earlier report, and
//     HeldSince is cleared;
//   - Digest, when absent: the digest of the node's previous report, when
//     that was of the same declaration;
//   - ApplyID, when absent: the event's id (the apply id it was appended
//     under).
//
// A Reports must see every apply.reported of a node, in stream order, to
// resolve them: each projection that reads held lists or digests keeps its
// own (projections fold concurrently) and resets it with its state. It keeps
// per node the last report's declaration and digest, and the last
// maxHeldLists held lists carried in full (a held list changes on take,
// release or assign, rarely). A HeldSince those lists miss (a report that
// names one more than maxHeldLists lists back, or a resolver that started
// after it: a snapshot, a reader of the tail) is looked up through the
// store when the resolver has a lookup (SetLookup; a Runner on a store
// that is an events.IDReader sets one on every projection it feeds), and
// the list found is kept as one carried in full: a report resolves at any
// distance from the one it names, and the quiet passes after it from
// memory. It is not safe for concurrent use.
type Reports struct {
	nodes  map[string]*reportsNode
	lookup HeldLookup // nil: what the lists miss is ErrUnresolved
}

type reportsNode struct {
	decl, digest string
	held         []heldList // oldest first, at most maxHeldLists
}

type heldList struct {
	apply string
	held  []events.Held
}

// maxHeldLists is how many full held lists a Reports keeps per node. An
// agent names the last one it sent in full; more are kept for a report
// written by an agent whose state was restored from an older copy.
const maxHeldLists = 8

// NewReports returns an empty resolver.
func NewReports() *Reports { return &Reports{nodes: map[string]*reportsNode{}} }

// Reset forgets everything but the lookup.
func (r *Reports) Reset() { r.nodes = map[string]*reportsNode{} }

// SetLookup makes r look up, with fn, a HeldSince its lists miss (nil: no
// lookup). fn is called on the goroutine that resolves. The stored report
// it reads never changes, so a fold that looks one up is the same fold as
// one that had it in memory.
func (r *Reports) SetLookup(fn HeldLookup) { r.lookup = fn }

// Resolve returns a, the payload of ev, in full. The held list it fills in
// is shared with the report that carried it: never modify it. A HeldSince
// that names no held list seen on the node is ErrUnresolved; one the
// store does not resolve either is ErrHoldsUnknown (to fold, not to fail
// on). The report is then returned with an empty held list.
func (r *Reports) Resolve(ev events.Event, a events.ApplyReported) (events.ApplyReported, error) {
	return r.resolve(&ev, a, true)
}

// resolveHeld is Resolve for a projection that never reads ApplyID (holds,
// the timeline): it fills ApplyID only where the resolver keeps it, with a
// held list carried in full, and leaves it empty otherwise, which spares an
// allocation of the id's text on nearly every report.
func (r *Reports) resolveHeld(ev *events.Event, a events.ApplyReported) (events.ApplyReported, error) {
	return r.resolve(ev, a, false)
}

func (r *Reports) resolve(ev *events.Event, a events.ApplyReported, withID bool) (events.ApplyReported, error) {
	name := a.Node
	if name == "" {
		name = streamNode(ev.Stream)
	}
	n := r.nodes[name]
	if n == nil {
		n = &reportsNode{}
		r.nodes[name] = n
	}
	if a.ApplyID == "" && (withID || (a.HeldSince == "" && len(a.Held) > 0)) {
		a.ApplyID = ev.ID.String()
	}
	if a.Digest == "" && a.Declaration == n.decl {
		a.Digest = n.digest
	}
	n.decl, n.digest = a.Declaration, a.Digest
	var err error
	switch {
	case a.HeldSince != "":
		i := slices.IndexFunc(n.held, func(h heldList) bool { return h.apply == a.HeldSince })
		switch {
		case i >= 0:
			a.Held = n.held[i].held
		case r.lookup != nil:
			held, lerr := r.lookup(ev.Stream, a.HeldSince)
			if lerr != nil {
				err = fmt.Errorf("projections: apply report at position %d: held list of apply %s: %w", ev.Position, a.HeldSince, lerr)
				if errors.Is(lerr, events.ErrHeldUnresolved) {
					err = fmt.Errorf("%w (%w)", err, ErrHoldsUnknown)
				}
				a.Held = nil
				break
			}
			a.Held = slices.Clip(held)
			n.keep(a.HeldSince, a.Held)
		default:
			err = fmt.Errorf("projections: apply report at position %d: held list of apply %s: %w", ev.Position, a.HeldSince, ErrUnresolved)
			a.Held = nil
		}
		a.HeldSince = ""
	case len(a.Held) > 0:
		a.Held = slices.Clip(a.Held)
		n.keep(a.ApplyID, a.Held)
	}
	return a, err
}

// keep adds a held list carried in full (or looked up) by apply, dropping
// the oldest past maxHeldLists.
func (n *reportsNode) keep(apply string, held []events.Held) {
	if len(n.held) == maxHeldLists {
		n.held = slices.Delete(n.held, 0, 1)
	}
	n.held = append(n.held, heldList{apply: apply, held: held})
}

// Reports in a snapshot (snapshot.go has the file format, its version and
// the shared tables): a change to what follows, in shape or meaning, needs
// a new snapshotVersion.

type reportsSnap struct {
	Nodes map[string]reportsNodeSnap
}

type reportsNodeSnap struct {
	Decl, Digest string
	Applies      []string
	Held         [][]events.Held
}

func (r *Reports) save() reportsSnap {
	out := reportsSnap{Nodes: make(map[string]reportsNodeSnap, len(r.nodes))}
	for _, name := range slices.Sorted(maps.Keys(r.nodes)) {
		n := r.nodes[name]
		s := reportsNodeSnap{Decl: n.decl, Digest: n.digest}
		for _, h := range n.held {
			s.Applies = append(s.Applies, h.apply)
			s.Held = append(s.Held, h.held)
		}
		out.Nodes[name] = s
	}
	return out
}

func (r *Reports) load(s reportsSnap) {
	r.nodes = make(map[string]*reportsNode, len(s.Nodes))
	for name, sn := range s.Nodes {
		n := &reportsNode{decl: sn.Decl, digest: sn.Digest}
		for i, a := range sn.Applies {
			n.held = append(n.held, heldList{apply: a, held: sn.Held[i]})
		}
		r.nodes[name] = n
	}
}
