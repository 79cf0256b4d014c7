package commands

import (
	"context"
	"maps"
	"slices"
	"sync"

	"meshplane/declaration"
	"meshplane/events"
)

// Batch is the Reader for composing many nodes from one reading of the
// mesh: a controller's push of every node, or a simulator's pass. Without
// it, composing N nodes costs N² reads and N² plans, because every compose
// reads and plans every node for the roster (Compose); with it, a batch of
// N composes reads each node and module once and plans each node once, so
// registering or passing over 1,000 nodes costs linear time.
//
// What it remembers:
//
//   - every node and module read, for the rest of the batch; the node being
//     composed is always read afresh (For), since its version guards the
//     append of its declaration. A failed read is never remembered: the
//     next compose meets the failure again and records it (DESIGN.md rule 1,
//     seed 000).
//   - once prepared, the mesh as every compose sees it apart from the node
//     composed (a snapshot: the listed nodes, their modules, the artifact
//     store, each node's plan once, the whole roster sorted), so that a
//     compose reads its own node, plans it, and takes every other node's
//     routes from the snapshot: O(roster) a compose, not O(nodes) reads,
//     map insertions and plans. A node read afresh whose plan's inputs
//     (registration, assigned modules, settings) changed discards it; it is
//     made again from what the batch then holds.
//
// Once prepared (Prepare), it lists to each compose only the nodes that can
// change another node's declaration, which are (see Compose, gather and
// plan) those
//
//   - with a module assigned: their plans give the roster's routes, and an
//     incoherent plan is recorded in Skipped;
//   - holding the artifact store (the first of them, in name order, is the
//     one every artifact image is pulled from);
//   - whose read failed while preparing: nothing is known of them, so every
//     compose reads them and fails as it would without a batch;
//
// plus the node being composed (compose adds it). A node with no module and
// no artifact store has an empty plan, always coherent, routing nothing:
// listing it or not composes the same bytes, which the batch's test checks
// on a mesh with every kind of node. When the node list cannot be read,
// the batch lists every node and each compose reads the list itself.
//
// A batch sees the mesh as it was when read: a command executed during the
// batch may be missed by the composes after it (the next batch sees it),
// as with any compose that raced a command. It is safe for concurrent use.
type Batch struct {
	r Reader

	mu      sync.Mutex
	names   []string // every registered node, sorted (nil until read)
	feeders []string // the nodes listed to each compose; nil: every node
	nodes   map[string]Node
	modules map[string]Module
	snap    *snapshot // nil until made, and once discarded
	gen     uint64    // counts discards, so that a snapshot made meanwhile is not kept

	snapMu sync.Mutex // one snapshot made at a time
}

// snapshot is the mesh as every compose of a batch sees it, apart from the
// node composed: the listed nodes (Batch.feeders) as gathered, and the
// plans of each.
type snapshot struct {
	m       *mesh
	listed  map[string]bool
	roster  roster           // every listed node's routes, sorted
	skipped []events.Skipped // every listed node whose plan does not compose, in name order
}

// NewBatch returns a batch reading through r (a Handler, or any Reader).
func NewBatch(r Reader) *Batch {
	return &Batch{r: r, nodes: map[string]Node{}, modules: map[string]Module{}}
}

// Prepare reads the node list and every node, and keeps the nodes that can
// change another node's declaration (see Batch). A failure is not returned:
// the composes meet it and record it themselves.
func (b *Batch) Prepare(ctx context.Context) {
	names, err := b.Nodes(ctx)
	if err != nil {
		return
	}
	feeders := []string{}
	for _, name := range names {
		n, err := b.Node(ctx, name)
		if err != nil || len(n.AssignedModules()) > 0 || n.ArtifactStorePort() != "" {
			feeders = append(feeders, name)
		}
	}
	b.mu.Lock()
	b.feeders = feeders
	b.mu.Unlock()
}

// For returns the Reader for composing node: node read afresh, the rest
// remembered, and once prepared only the nodes that matter to node's
// declaration listed.
func (b *Batch) For(node string) Reader { return batchView{b, node} }

// Feeders returns the nodes listed to each compose (nil: every node).
func (b *Batch) Feeders() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.feeders)
}

// Nodes lists every registered node, read once.
func (b *Batch) Nodes(ctx context.Context) ([]string, error) {
	b.mu.Lock()
	names := b.names
	b.mu.Unlock()
	if names == nil {
		var err error
		if names, err = b.r.Nodes(ctx); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.names = names
		b.mu.Unlock()
	}
	return slices.Clone(names), nil
}

// Node returns a node's state, read once.
func (b *Batch) Node(ctx context.Context, name string) (Node, error) {
	b.mu.Lock()
	n, ok := b.nodes[name]
	b.mu.Unlock()
	if ok {
		return n, nil
	}
	return b.readNode(ctx, name)
}

func (b *Batch) readNode(ctx context.Context, name string) (Node, error) {
	n, err := b.r.Node(ctx, name)
	if err != nil {
		return n, err
	}
	b.mu.Lock()
	if old, ok := b.nodes[name]; ok && !samePlanInputs(old, n) {
		b.snap = nil
		b.gen++
	}
	b.nodes[name] = n
	b.mu.Unlock()
	return n, nil
}

// samePlanInputs reports whether a and b plan alike and route alike, as far
// as any compose can tell: registered, assigned the same modules, given the
// same settings (ports, private address, artifact store).
func samePlanInputs(a, b Node) bool {
	return a.Registered == b.Registered && maps.Equal(a.Assigned, b.Assigned) && maps.Equal(a.Settings, b.Settings)
}

// Module returns a module's state, read once.
func (b *Batch) Module(ctx context.Context, name string) (Module, error) {
	b.mu.Lock()
	m, ok := b.modules[name]
	b.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := b.r.Module(ctx, name)
	if err != nil {
		return m, err
	}
	b.mu.Lock()
	b.modules[name] = m
	b.mu.Unlock()
	return m, nil
}

// Batched is a Reader whose composes a Batch's snapshot may serve
// (Compose asks it first): the Readers a Batch returns are. A Reader that
// wraps one to change what some reads answer must not be Batched, or the
// snapshot would answer for it.
type Batched interface {
	Reader
	Batch() *Batch
}

// batchView is a Batch's Reader for composing one node.
type batchView struct {
	b    *Batch
	self string
}

var _ Batched = batchView{}

// Batch returns the batch.
func (v batchView) Batch() *Batch { return v.b }

// Nodes lists the nodes self's compose must read: once prepared, those that
// can change another node's declaration (compose adds self); else every
// node.
func (v batchView) Nodes(ctx context.Context) ([]string, error) {
	v.b.mu.Lock()
	feeders := v.b.feeders
	v.b.mu.Unlock()
	if feeders != nil {
		return slices.Clone(feeders), nil
	}
	return v.b.Nodes(ctx)
}

// Node reads self afresh (and remembers it for the others), the rest once.
func (v batchView) Node(ctx context.Context, name string) (Node, error) {
	if name == v.self {
		return v.b.readNode(ctx, name)
	}
	return v.b.Node(ctx, name)
}

// Module reads a module once.
func (v batchView) Module(ctx context.Context, name string) (Module, error) {
	return v.b.Module(ctx, name)
}

// compose is Compose through the batch's snapshot: ok false when the
// snapshot cannot serve node's compose (not prepared, a read failed, or
// node's own plan needs what the snapshot did not gather), and Compose
// then gathers as it would without it, meeting any failure itself.
func (b *Batch) compose(ctx context.Context, node, correlation string) (Composition, bool, error) {
	self, err := b.readNode(ctx, node)
	if err != nil || !self.Registered {
		return Composition{}, false, nil
	}
	s := b.snapshot(ctx)
	if s == nil {
		return Composition{}, false, nil
	}
	if !s.listed[node] {
		// Not listed: its plan must be empty and it must not hold the
		// artifact store, or the others would have read it.
		if len(self.AssignedModules()) > 0 || self.ArtifactStorePort() != "" {
			return Composition{}, false, nil
		}
	} else if !samePlanInputs(s.m.nodes[node], self) {
		return Composition{}, false, nil // changed since the snapshot was made
	}
	m := *s.m
	m.target = node
	own, err := m.plan(self)
	if err != nil {
		return Composition{}, true, err
	}
	// The roster is the snapshot's: a listed node's own routes are those
	// the snapshot planned (its plan inputs are the same, checked above),
	// and a node not listed routes nothing.
	var skipped []events.Skipped
	for _, sk := range s.skipped {
		if sk.Node != node {
			skipped = append(skipped, sk)
		}
	}
	return composition(self, own, s.roster, skipped, correlation), true, nil
}

// snapshot returns the batch's snapshot, made from the listed nodes if
// there is none; nil when the batch is not prepared or a read fails.
func (b *Batch) snapshot(ctx context.Context) *snapshot {
	b.mu.Lock()
	s, feeders := b.snap, b.feeders
	b.mu.Unlock()
	if s != nil || feeders == nil {
		return s
	}
	b.snapMu.Lock()
	defer b.snapMu.Unlock()
	b.mu.Lock()
	s, gen := b.snap, b.gen
	b.mu.Unlock()
	if s != nil {
		return s
	}
	m := &mesh{names: feeders, nodes: make(map[string]Node, len(feeders)), modules: map[string]Module{}}
	s = &snapshot{m: m, listed: make(map[string]bool, len(feeders))}
	for _, name := range feeders {
		n, err := b.Node(ctx, name)
		if err != nil {
			return nil
		}
		m.nodes[name] = n
		s.listed[name] = true
		if n.ArtifactStorePort() != "" && m.store == nil {
			m.store = &n
		}
		for _, mod := range n.AssignedModules() {
			if _, ok := m.modules[mod]; ok {
				continue
			}
			md, err := b.Module(ctx, mod)
			if err != nil {
				return nil
			}
			m.modules[mod] = md
		}
	}
	var routes []declaration.Route
	for _, name := range feeders {
		n := m.nodes[name]
		p, err := m.plan(n)
		if err != nil { // an *IncoherentError: plan reads nothing
			s.skipped = append(s.skipped, events.Skipped{Node: name, Reason: err.Error()})
			continue
		}
		for _, r := range p.routes {
			routes = append(routes, declaration.Route{Name: r, Address: n.PrivateAddress(), Node: name})
		}
	}
	sortRoutes(routes)
	s.roster = newRoster(routes)
	b.mu.Lock()
	if b.gen == gen {
		b.snap = s
	}
	b.mu.Unlock()
	return s
}
