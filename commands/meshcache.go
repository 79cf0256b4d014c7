package commands

import (
	"context"
	"maps"
	"slices"
	"sync"

	"meshplane/declaration"
	"meshplane/events"
)

// MeshCache is a caching Reader of the mesh, for composing many nodes from
// one reading of it: a controller's push of every node, or a simulator's
// pass. Without it, composing N nodes costs N² reads and N² plans, because
// every compose reads and plans every node for the roster (Compose); with
// it, N composes read each node and module once and plan each node once,
// so registering or passing over 1,000 nodes costs linear time.
//
// What it remembers:
//
//   - every node and module read, for the cache's life; the node being
//     composed is always read afresh (For), since its version guards the
//     append of its declaration. A failed read is never remembered: the
//     next compose meets the failure again and records it (docs/design.md rule 1,
//     seed 000).
//   - once prepared, the mesh as every compose sees it apart from the node
//     composed (a snapshot: the listed nodes, their modules, the artifact
//     store, each node's plan once, the whole roster sorted), so that a
//     compose reads its own node, plans it, and takes every other node's
//     routes from the snapshot: O(roster) a compose, not O(nodes) reads,
//     map insertions and plans. A node read afresh whose plan's inputs
//     (registration, assigned modules, settings) changed discards it; it is
//     made again from what the cache then holds.
//
// Once prepared (Prepare), it lists to each compose only the nodes that can
// change another node's declaration, which are (see Compose, gather and
// plan) those
//
//   - with a module assigned: their plans give the roster's routes, and an
//     incoherent plan is recorded in Skipped; and their settings give the
//     address of every service their modules provide to the containers
//     that reach it (bindings.go);
//   - holding the artifact store (the first of them, in name order, is the
//     one every artifact image is pulled from);
//   - whose read failed while preparing: nothing is known of them, so every
//     compose reads them and fails as it would without a cache;
//
// plus the node being composed (compose adds it). A node with no module and
// no artifact store has an empty plan, always coherent, routing nothing:
// listing it or not composes the same bytes, which the cache's test checks
// on a mesh with every kind of node. When the node list cannot be read,
// the cache lists every node and each compose reads the list itself.
//
// A cache sees the mesh as it was when read: a command executed during its
// life may be missed by the composes after it (the next cache sees it), as
// with any compose that raced a command. Make one for each pass over the
// nodes. It is safe for concurrent use.
type MeshCache struct {
	r Reader

	mu      sync.Mutex
	names   []string // every registered node, sorted (nil until read)
	feeders []string // the nodes listed to each compose; nil: every node
	nodes   map[string]Node
	modules map[string]Module
	unread  map[string]bool // nodes whose last read failed (never remembered: read again)
	snap    *snapshot       // nil until made, and once discarded
	gen     uint64          // counts discards, so that a snapshot made meanwhile is not kept

	snapMu sync.Mutex // one snapshot made at a time
}

// snapshot is the mesh as every compose through a cache sees it, apart from the
// node composed: the listed nodes (MeshCache.feeders) as gathered, and the
// plans of each.
type snapshot struct {
	m       *mesh
	listed  map[string]bool
	roster  roster           // every listed node's routes, sorted
	skipped []events.Skipped // every listed node whose plan does not compose, in name order
}

// NewMeshCache returns an empty cache reading through r (a Handler, or any Reader).
func NewMeshCache(r Reader) *MeshCache {
	return &MeshCache{r: r, nodes: map[string]Node{}, modules: map[string]Module{}, unread: map[string]bool{}}
}

// Prepare reads the node list and every node, and keeps the nodes that can
// change another node's declaration (see MeshCache). A failure is not returned:
// the composes meet it and record it themselves.
func (mc *MeshCache) Prepare(ctx context.Context) {
	names, err := mc.Nodes(ctx)
	if err != nil {
		return
	}
	feeders := []string{}
	for _, name := range names {
		n, err := mc.Node(ctx, name)
		if err != nil || len(n.AssignedModules()) > 0 || n.ArtifactStorePort() != "" {
			feeders = append(feeders, name)
		}
	}
	mc.mu.Lock()
	mc.feeders = feeders
	mc.mu.Unlock()
}

// For returns the Reader for composing node: node read afresh, the rest
// remembered, and once prepared only the nodes that matter to node's
// declaration listed.
func (mc *MeshCache) For(node string) Reader { return cacheView{mc, node} }

// Feeders returns the nodes listed to each compose (nil: every node).
func (mc *MeshCache) Feeders() []string {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return slices.Clone(mc.feeders)
}

// Nodes lists every registered node, read once.
func (mc *MeshCache) Nodes(ctx context.Context) ([]string, error) {
	mc.mu.Lock()
	names := mc.names
	mc.mu.Unlock()
	if names == nil {
		var err error
		if names, err = mc.r.Nodes(ctx); err != nil {
			return nil, err
		}
		mc.mu.Lock()
		mc.names = names
		mc.mu.Unlock()
	}
	return slices.Clone(names), nil
}

// Node returns a node's state, read once.
func (mc *MeshCache) Node(ctx context.Context, name string) (Node, error) {
	mc.mu.Lock()
	n, ok := mc.nodes[name]
	mc.mu.Unlock()
	if ok {
		return n, nil
	}
	return mc.readNode(ctx, name)
}

func (mc *MeshCache) readNode(ctx context.Context, name string) (Node, error) {
	n, err := mc.r.Node(ctx, name)
	mc.mu.Lock()
	if err != nil {
		mc.unread[name] = true
		mc.mu.Unlock()
		return n, err
	}
	delete(mc.unread, name)
	if old, ok := mc.nodes[name]; ok && !samePlanInputs(old, n) {
		mc.snap = nil
		mc.gen++
	}
	mc.nodes[name] = n
	mc.mu.Unlock()
	return n, nil
}

// samePlanInputs reports whether a and b plan alike and route alike, as far
// as any compose can tell: registered, assigned the same modules, given the
// same settings (ports, private address, artifact store).
func samePlanInputs(a, b Node) bool {
	return a.Registered == b.Registered && maps.Equal(a.Assigned, b.Assigned) && maps.Equal(a.Settings, b.Settings)
}

// Module returns a module's state, read once.
func (mc *MeshCache) Module(ctx context.Context, name string) (Module, error) {
	mc.mu.Lock()
	m, ok := mc.modules[name]
	mc.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := mc.r.Module(ctx, name)
	if err != nil {
		return m, err
	}
	mc.mu.Lock()
	mc.modules[name] = m
	mc.mu.Unlock()
	return m, nil
}

// Cached is a Reader whose composes a MeshCache's snapshot may serve
// (Compose asks it first): the Readers a MeshCache returns are. A Reader that
// wraps one to change what some reads answer must not be Cached, or the
// snapshot would answer for it.
type Cached interface {
	Reader
	Cache() *MeshCache
}

// cacheView is a MeshCache's Reader for composing one node.
type cacheView struct {
	mc   *MeshCache
	self string
}

var _ Cached = cacheView{}

// Cache returns the cache.
func (v cacheView) Cache() *MeshCache { return v.mc }

// Nodes lists the nodes self's compose must read: once prepared, those that
// can change another node's declaration (compose adds self); else every
// node.
func (v cacheView) Nodes(ctx context.Context) ([]string, error) {
	v.mc.mu.Lock()
	feeders := v.mc.feeders
	v.mc.mu.Unlock()
	if feeders != nil {
		return slices.Clone(feeders), nil
	}
	return v.mc.Nodes(ctx)
}

// Node reads self afresh (and remembers it for the others), the rest once.
func (v cacheView) Node(ctx context.Context, name string) (Node, error) {
	if name == v.self {
		return v.mc.readNode(ctx, name)
	}
	return v.mc.Node(ctx, name)
}

// Module reads a module once.
func (v cacheView) Module(ctx context.Context, name string) (Module, error) {
	return v.mc.Module(ctx, name)
}

// compose is Compose through the cache's snapshot: ok false when the
// snapshot cannot serve node's compose (not prepared, a read failed, or
// node's own plan needs what the snapshot did not gather), and Compose
// then gathers as it would without it, meeting any failure itself.
func (mc *MeshCache) compose(ctx context.Context, node, correlation string) (Composition, bool, error) {
	self, err := mc.readNode(ctx, node)
	if err != nil || !self.Registered {
		return Composition{}, false, nil
	}
	if err := mc.unreadFeeder(ctx, node); err != nil {
		return Composition{}, true, err
	}
	s := mc.snapshot(ctx)
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

// unreadFeeder reads again, in name order, the listed nodes (but node)
// whose last read failed, and returns the failure of the first that fails
// again as the compose of node through Compose would (gather's ReadError):
// every node gather reads before it is remembered, so cannot fail, and the
// node composed was just read. Without it every compose of a pass with a
// failing read tried the snapshot and then gathered every node, N² reads
// and key sorts in all (27 s of CPU, against 3 s, for a 3,000-node pass).
// Nil when none fails (or the cache is not prepared): the snapshot, or
// Compose, goes on.
func (mc *MeshCache) unreadFeeder(ctx context.Context, node string) error {
	mc.mu.Lock()
	var names []string
	for name := range mc.unread {
		if _, listed := slices.BinarySearch(mc.feeders, name); listed && name != node {
			names = append(names, name)
		}
	}
	mc.mu.Unlock()
	slices.Sort(names)
	for _, name := range names {
		if _, err := mc.readNode(ctx, name); err != nil {
			return &ReadError{Node: node, Read: "node " + name, Err: err}
		}
	}
	return nil
}

// snapshot returns the cache's snapshot, made from the listed nodes if
// there is none; nil when the cache is not prepared or a read fails.
func (mc *MeshCache) snapshot(ctx context.Context) *snapshot {
	mc.mu.Lock()
	s, feeders := mc.snap, mc.feeders
	mc.mu.Unlock()
	if s != nil || feeders == nil {
		return s
	}
	mc.snapMu.Lock()
	defer mc.snapMu.Unlock()
	mc.mu.Lock()
	s, gen := mc.snap, mc.gen
	mc.mu.Unlock()
	if s != nil {
		return s
	}
	m := &mesh{names: feeders, nodes: make(map[string]Node, len(feeders)), modules: map[string]Module{}}
	s = &snapshot{m: m, listed: make(map[string]bool, len(feeders))}
	for _, name := range feeders {
		n, err := mc.Node(ctx, name)
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
			md, err := mc.Module(ctx, mod)
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
	mc.mu.Lock()
	if mc.gen == gen {
		mc.snap = s
	}
	mc.mu.Unlock()
	return s
}
