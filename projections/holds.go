package projections

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"meshplane/events"
)

// Holds is each node's own list of held resources, from its latest apply
// report (docs/design.md rule 3, seed 002): what the node decided at apply time,
// not what the controller expected. A resource held by consecutive applies
// keeps the declaration and position from which it has been held.
type Holds struct {
	mu      sync.RWMutex
	nodes   map[string]*holdsNode
	reports *Reports // resolves compact apply reports
}

type holdsNode struct {
	Declaration string `json:"declaration"` // of the latest apply
	Position    uint64 `json:"position"`
	Held        []Hold `json:"held"` // sorted by module, then name; never modified in place
	// from is the resolved held list Held was made from (nil in a node
	// loaded from a snapshot). A compact report resolves to the very list
	// the report it names carried (Reports), so a report whose list is
	// from, same array and length, holds what the last one held: Held
	// stays as it is, each hold's Since included.
	from []events.Held
}

// Hold is one held resource.
type Hold struct {
	Name   string `json:"name"`
	Module string `json:"module"`
	Reason string `json:"reason"`
	// Since is the apply from which the resource has been held, without a
	// break, for the same reason.
	Since HoldSince `json:"since"`
}

// HoldSince marks the apply that first held a resource.
type HoldSince struct {
	Declaration string    `json:"declaration"`
	Position    uint64    `json:"position"`
	At          time.Time `json:"at"`
}

var _ Projection = (*Holds)(nil)

// NewHolds returns an empty holds projection.
func NewHolds() *Holds { return &Holds{nodes: map[string]*holdsNode{}, reports: NewReports()} }

// Name is "holds".
func (h *Holds) Name() string { return "holds" }

// Reset forgets everything.
func (h *Holds) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes = map[string]*holdsNode{}
	h.reports.Reset()
}

// Fold replaces a node's list with the one of each apply.reported (a
// compact report's resolved, see Reports).
func (h *Holds) Fold(ev events.Event, p events.Payload) error {
	return h.fold(&ev, p, nodeOf(ev, p))
}

// fold is Fold of an event concerning node (nodeOf).
func (h *Holds) fold(ev *events.Event, p events.Payload, node string) error {
	if _, ok := p.(events.NodeRemoved); ok && node != "" {
		h.mu.Lock()
		delete(h.nodes, node)
		h.mu.Unlock()
		return nil
	}
	a, ok := p.(events.ApplyReported)
	if !ok {
		return nil
	}
	if node == "" {
		return unattributed(h.Name(), *ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a, err := h.reports.resolveHeld(ev, a)
	if errors.Is(err, ErrHoldsUnknown) {
		return nil // what it held is not known: the holds stay as the last known report left them
	}
	if err != nil {
		return err
	}
	prev := h.nodes[node]
	if prev != nil && prev.Held != nil && len(prev.Held) == len(a.Held) && sameArray(prev.from, a.Held) {
		// The same list again (see holdsNode.from). The node is updated in
		// place: queries copy what they return, under the lock.
		prev.Declaration, prev.Position = a.Declaration, ev.Position
		return nil
	}
	n := &holdsNode{Declaration: a.Declaration, Position: ev.Position, Held: make([]Hold, 0, len(a.Held)), from: a.Held}
	since := HoldSince{Declaration: a.Declaration, Position: ev.Position, At: ev.At}
	var before map[events.Held]HoldSince
	if prev != nil && len(prev.Held) > 0 {
		before = make(map[events.Held]HoldSince, len(prev.Held))
		for _, o := range prev.Held {
			before[events.Held{Name: o.Name, Module: o.Module, Reason: o.Reason}] = o.Since
		}
	}
	for _, x := range a.Held {
		hold := Hold{Name: x.Name, Module: x.Module, Reason: x.Reason, Since: since}
		if s, ok := before[x]; ok {
			hold.Since = s
		}
		n.Held = append(n.Held, hold)
	}
	slices.SortStableFunc(n.Held, func(a, b Hold) int {
		if a.Module != b.Module {
			if a.Module < b.Module {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	h.nodes[node] = n
	return nil
}

// sameArray reports whether a and b are the same slice of the same array:
// both empty, or of one length and one first element.
func sameArray(a, b []events.Held) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Of returns node's held resources from its latest apply, sorted by module
// then name; empty when that apply held nothing. A node that never reported
// an apply is ErrUnknownNode.
func (h *Holds) Of(node string) ([]Hold, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n, ok := h.nodes[node]
	if !ok {
		return nil, fmt.Errorf("projections: holds of %q: %w", node, ErrUnknownNode)
	}
	return slices.Clone(n.Held), nil
}

// Nodes lists the nodes that reported an apply, sorted.
func (h *Holds) Nodes() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Sorted(maps.Keys(h.nodes))
}

// MarshalJSON writes every node's list, nodes sorted.
func (h *Holds) MarshalJSON() ([]byte, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return marshal(h.nodes)
}

// Holds in a snapshot (snapshot.go has the file format, its version and
// the shared tables): a change to what follows, in shape or meaning, needs
// a new snapshotVersion.

type holdsSnap struct {
	Nodes   map[string]holdsNode
	Reports reportsSnap
}

func (h *Holds) save() *holdsSnap {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := &holdsSnap{Nodes: make(map[string]holdsNode, len(h.nodes)), Reports: h.reports.save()}
	for name, n := range h.nodes {
		out.Nodes[name] = *n
	}
	return out
}

func (h *Holds) load(s *holdsSnap) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes = make(map[string]*holdsNode, len(s.Nodes))
	for name, n := range s.Nodes {
		n := n
		if n.Held == nil {
			n.Held = []Hold{}
		}
		h.nodes[name] = &n
	}
	h.reports.load(s.Reports)
}
