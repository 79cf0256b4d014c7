package commands

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
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
//   - every other node's plan, keyed by what it was planned from (the
//     node's version, its assigned modules' versions and the artifact
//     store's node), so a node read afresh or a module read later is
//     planned again.
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
	plans   map[string]memoPlan // node → its last plan, with what it was planned from
}

// memoPlan is the part of a plan another node's compose uses: the routes,
// or why the plan does not compose.
type memoPlan struct {
	key    string
	routes []string
	err    error // an *IncoherentError, or nil
}

// NewBatch returns a batch reading through r (a Handler, or any Reader).
func NewBatch(r Reader) *Batch {
	return &Batch{r: r, nodes: map[string]Node{}, modules: map[string]Module{}, plans: map[string]memoPlan{}}
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
	b.nodes[name] = n
	b.mu.Unlock()
	return n, nil
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

// PlanMemo is a Reader that remembers the plans of other nodes across the
// composes of a batch: a Batch's readers are. A Reader that wraps one (to
// change what some reads answer) keeps the memo by implementing PlanMemo
// too; the memo notices changed answers (see planKey).
type PlanMemo interface {
	Reader
	PlanMemo() *Batch
}

// batchView is a Batch's Reader for composing one node.
type batchView struct {
	*Batch
	self string
}

var _ PlanMemo = batchView{}

// PlanMemo returns the batch.
func (v batchView) PlanMemo() *Batch { return v.Batch }

// Nodes lists the nodes self's compose must read: once prepared, those that
// can change another node's declaration (compose adds self); else every
// node.
func (v batchView) Nodes(ctx context.Context) ([]string, error) {
	v.mu.Lock()
	feeders := v.feeders
	v.mu.Unlock()
	if feeders != nil {
		return slices.Clone(feeders), nil
	}
	return v.Batch.Nodes(ctx)
}

// Node reads self afresh (and remembers it for the others), the rest once.
func (v batchView) Node(ctx context.Context, name string) (Node, error) {
	if name == v.self {
		return v.readNode(ctx, name)
	}
	return v.Batch.Node(ctx, name)
}

// otherPlan is m.plan(n) for a node other than the one composed, as far
// as compose uses it, remembered for the batch.
func (b *Batch) otherPlan(m *mesh, n Node) ([]string, error) {
	key := planKey(m, n)
	b.mu.Lock()
	p, ok := b.plans[n.Name]
	b.mu.Unlock()
	if ok && p.key == key {
		return p.routes, p.err
	}
	pl, err := m.plan(n)
	p = memoPlan{key: key, routes: pl.routes, err: err}
	b.mu.Lock()
	b.plans[n.Name] = p
	b.mu.Unlock()
	return p.routes, p.err
}

// planKey names what m.plan(n) is made of: n (its version, and its assigned
// modules, which a Reader may have changed without a version, as the
// simulator's seed-000 reader does), those modules' versions, and the node
// holding the artifact store.
func planKey(m *mesh, n Node) string {
	var k strings.Builder
	k.WriteString(strconv.FormatUint(n.Version, 10))
	for _, mod := range n.AssignedModules() {
		k.WriteByte(' ')
		k.WriteString(mod)
		k.WriteByte('@')
		if md, ok := m.modules[mod]; ok {
			k.WriteString(strconv.FormatUint(md.Version, 10))
		} else {
			k.WriteByte('-')
		}
	}
	if m.store != nil {
		k.WriteString(" store ")
		k.WriteString(m.store.Name)
		k.WriteByte('@')
		k.WriteString(strconv.FormatUint(m.store.Version, 10))
	}
	return k.String()
}
