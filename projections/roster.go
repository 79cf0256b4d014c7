package projections

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"meshplane/events"
)

// Roster is, per node, every declaration composed for it in order (its
// history): the roster of routed names and the resources (with digests) of
// each. It answers "what did novox's roster hold at declaration 7" and the
// diff between two declarations.
//
// Invariant: a node's history is in position order; the current declaration
// is its last. Consecutive declarations with equal rosters (or resources)
// share one slice, so a long quiet history costs little; slices held by the
// projection are never modified.
type Roster struct {
	mu    sync.RWMutex
	nodes map[string]*rosterNode
}

type rosterNode struct {
	History []ComposedDecl `json:"history"`
	index   declIndex[int] // declaration id → last index in History
	trimmed bool           // loaded from a snapshot that kept only the latest declarations
}

// ComposedDecl is one composed declaration as the roster keeps it.
type ComposedDecl struct {
	Declaration string               `json:"declaration"`
	Digest      string               `json:"digest"`
	Position    uint64               `json:"position"`
	At          time.Time            `json:"at"`
	Correlation string               `json:"correlation,omitempty"`
	Roster      []string             `json:"roster"`
	Resources   []events.ResourceRef `json:"resources"`
}

// Diff is what changed from one declaration to another.
type Diff struct {
	From, To         string   // declaration ids
	Added, Removed   []string // routed names, sorted
	ResourcesAdded   []string // resource names, sorted
	ResourcesRemoved []string
	ResourcesChanged []string // in both, with another digest
}

var _ Projection = (*Roster)(nil)

// NewRoster returns an empty roster projection.
func NewRoster() *Roster { return &Roster{nodes: map[string]*rosterNode{}} }

// Name is "roster".
func (r *Roster) Name() string { return "roster" }

// Reset forgets everything.
func (r *Roster) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = map[string]*rosterNode{}
}

// Fold records declaration.composed events.
func (r *Roster) Fold(ev events.Event, p events.Payload) error {
	return r.fold(&ev, p, nodeOf(ev, p))
}

// fold is Fold of an event concerning node (nodeOf).
func (r *Roster) fold(ev *events.Event, p events.Payload, node string) error {
	if _, ok := p.(events.NodeRemoved); ok && node != "" {
		// A removed node has no roster: a node registered again under
		// its name composes anew (its declaration ids go on counting).
		r.mu.Lock()
		delete(r.nodes, node)
		r.mu.Unlock()
		return nil
	}
	c, ok := p.(events.DeclarationComposed)
	if !ok {
		return nil
	}
	if node == "" {
		return unattributed(r.Name(), *ev)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.nodes[node]
	if n == nil {
		n = &rosterNode{}
		r.nodes[node] = n
	}
	d := ComposedDecl{
		Declaration: c.Declaration, Digest: c.Digest, Position: ev.Position,
		At: ev.At, Correlation: ev.Correlation, Roster: c.Roster, Resources: c.Resources,
	}
	if d.Roster == nil {
		d.Roster = []string{}
	}
	if d.Resources == nil {
		d.Resources = []events.ResourceRef{}
	}
	if k := len(n.History); k > 0 {
		prev := n.History[k-1]
		if sameStrings(prev.Roster, d.Roster) {
			d.Roster = prev.Roster
		}
		if slices.Equal(prev.Resources, d.Resources) {
			d.Resources = prev.Resources
		}
	}
	n.History = append(n.History, d)
	n.index.add(d.Declaration, len(n.History)-1)
	return nil
}

// Nodes lists the nodes with at least one composed declaration, sorted.
func (r *Roster) Nodes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.nodes))
}

// Current returns node's latest composed declaration.
func (r *Roster) Current(node string) (ComposedDecl, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n, ok := r.nodes[node]
	if !ok {
		return ComposedDecl{}, fmt.Errorf("projections: roster of %q: %w", node, ErrUnknownNode)
	}
	return n.History[len(n.History)-1], nil
}

// History returns every declaration composed for node, oldest first.
func (r *Roster) History(node string) ([]ComposedDecl, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n, ok := r.nodes[node]
	if !ok {
		return nil, fmt.Errorf("projections: roster history of %q: %w", node, ErrUnknownNode)
	}
	if n.trimmed {
		return nil, fmt.Errorf("projections: roster history of %q: %w", node, ErrTrimmed)
	}
	return slices.Clone(n.History), nil
}

// Declaration returns the declaration decl composed for node (the latest, if
// a hand-written stream reused the id).
func (r *Roster) Declaration(node, decl string) (ComposedDecl, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.decl(node, decl)
}

func (r *Roster) decl(node, decl string) (ComposedDecl, error) {
	n, ok := r.nodes[node]
	if !ok {
		return ComposedDecl{}, fmt.Errorf("projections: declaration %q of %q: %w", decl, node, ErrUnknownNode)
	}
	i, ok := n.index.peek(decl)
	if !ok && n.trimmed {
		return ComposedDecl{}, fmt.Errorf("projections: declaration %q of %q: %w", decl, node, ErrTrimmed)
	}
	if !ok {
		return ComposedDecl{}, fmt.Errorf("projections: declaration %q of %q: %w", decl, node, ErrUnknownDeclaration)
	}
	return n.History[i], nil
}

// Contains reports whether node's current roster holds name.
func (r *Roster) Contains(node, name string) (bool, error) {
	cur, err := r.Current(node)
	if err != nil {
		return false, err
	}
	return slices.Contains(cur.Roster, name), nil
}

// Diff compares two of node's declarations: routed names added and removed,
// and resources added, removed and changed (by digest), from → to.
func (r *Roster) Diff(node, from, to string) (Diff, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, err := r.decl(node, from)
	if err != nil {
		return Diff{}, fmt.Errorf("projections: diff: %w", err)
	}
	b, err := r.decl(node, to)
	if err != nil {
		return Diff{}, fmt.Errorf("projections: diff: %w", err)
	}
	d := Diff{From: from, To: to}
	d.Added, d.Removed = diffNames(a.Roster, b.Roster)
	ra := make(map[string]string, len(a.Resources))
	for _, res := range a.Resources {
		ra[res.Name] = res.Digest
	}
	rb := make(map[string]string, len(b.Resources))
	for _, res := range b.Resources {
		rb[res.Name] = res.Digest
		dg, ok := ra[res.Name]
		switch {
		case !ok:
			d.ResourcesAdded = append(d.ResourcesAdded, res.Name)
		case dg != res.Digest:
			d.ResourcesChanged = append(d.ResourcesChanged, res.Name)
		}
	}
	for _, res := range a.Resources {
		if _, ok := rb[res.Name]; !ok {
			d.ResourcesRemoved = append(d.ResourcesRemoved, res.Name)
		}
	}
	slices.Sort(d.ResourcesAdded)
	slices.Sort(d.ResourcesRemoved)
	slices.Sort(d.ResourcesChanged)
	d.ResourcesAdded = slices.Compact(d.ResourcesAdded)
	d.ResourcesRemoved = slices.Compact(d.ResourcesRemoved)
	d.ResourcesChanged = slices.Compact(d.ResourcesChanged)
	return d, nil
}

// diffNames returns the names in b not in a (added) and in a not in b
// (removed), each sorted and distinct.
func diffNames(a, b []string) (added, removed []string) {
	in := func(s []string) map[string]bool {
		m := make(map[string]bool, len(s))
		for _, v := range s {
			m[v] = true
		}
		return m
	}
	ia, ib := in(a), in(b)
	for v := range ib {
		if !ia[v] {
			added = append(added, v)
		}
	}
	for v := range ia {
		if !ib[v] {
			removed = append(removed, v)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

// MarshalJSON writes every node's history, nodes sorted by name.
func (r *Roster) MarshalJSON() ([]byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return marshal(r.nodes)
}

// Roster in a snapshot (snapshot.go has the file format, its version and
// the shared tables): a change to what follows, in shape or meaning, needs
// a new snapshotVersion.

type rosterSnap struct {
	Nodes   map[string][]composedSnap
	Trimmed map[string]bool `json:",omitempty"`
}

type composedSnap struct {
	Declaration, Digest string
	Position            uint64
	At                  time.Time
	Correlation         string
	Roster, Resources   int
}

func (r *Roster) save(t *tables) *rosterSnap {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &rosterSnap{Nodes: make(map[string][]composedSnap, len(r.nodes)), Trimmed: map[string]bool{}}
	for _, name := range slices.Sorted(maps.Keys(r.nodes)) {
		n := r.nodes[name]
		kept := n.History[max(0, len(n.History)-snapKeep):]
		if n.trimmed || len(kept) < len(n.History) {
			out.Trimmed[name] = true
		}
		h := make([]composedSnap, len(kept))
		for i, d := range kept {
			h[i] = composedSnap{
				Declaration: d.Declaration, Digest: d.Digest, Position: d.Position, At: d.At,
				Correlation: d.Correlation, Roster: t.strings(d.Roster), Resources: t.resources(d.Resources),
			}
		}
		out.Nodes[name] = h
	}
	return out
}

func (r *Roster) load(s *rosterSnap, st *snapState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = make(map[string]*rosterNode, len(s.Nodes))
	for name, h := range s.Nodes {
		n := &rosterNode{History: make([]ComposedDecl, len(h)), trimmed: s.Trimmed[name]}
		for i, d := range h {
			c := ComposedDecl{
				Declaration: d.Declaration, Digest: d.Digest, Position: d.Position, At: d.At,
				Correlation: d.Correlation, Roster: st.strs(d.Roster), Resources: st.res(d.Resources),
			}
			n.History[i] = c
			n.index.add(c.Declaration, i)
		}
		r.nodes[name] = n
	}
}
