package controller

import (
	"context"
	"slices"
	"sync"

	"meshplane/commands"
)

// batchReader is what the composes of one push read (commands.Reader): it
// reads each node and module once for the batch, so a push of N nodes reads
// N nodes and the modules, not N² of them. The node being composed is always
// read afresh (its version guards the append of its declaration). It is
// safe for the push workers to use at once.
//
// A compose loops over every node the reader lists (commands.Compose: each
// node's plan, for the roster), so N composes over the full list cost N²
// even with every read memoized: 1,000 nodes registered in one command took
// seconds of CPU in the composes alone. Once prepared, the reader lists to
// each compose only the nodes that can change another node's declaration,
// which are (see commands.Compose, gather and plan) the nodes
//
//   - with a module assigned: their plans give the roster's routes, and an
//     incoherent plan is recorded in Skipped;
//   - holding the artifact store (the first of them, in name order, is the
//     one every artifact image is pulled from);
//
// plus the node being composed (compose adds it to the list itself). A node
// with no module and no artifact store has an empty plan, always coherent,
// routing nothing: listing it or not composes the same bytes, which
// TestBatchReaderComposesAsTheStore checks on a mesh with every kind of
// node. Registering 1,000 nodes then composes in linear time.
//
// When the node list or a node cannot be read while preparing, the reader
// lists every node and reads as it is asked: the compose of each node then
// meets the failure itself and records it, as it would without a batch.
type batchReader struct {
	h *commands.Handler

	mu      sync.Mutex
	names   []string // every registered node, sorted (nil until read)
	feeders []string // the nodes listed to each compose; nil: every node
	nodes   map[string]commands.Node
	modules map[string]commands.Module
}

func newBatchReader(h *commands.Handler) *batchReader {
	return &batchReader{h: h, nodes: map[string]commands.Node{}, modules: map[string]commands.Module{}}
}

// prepare reads the node list and every node, and keeps the nodes that can
// change another node's declaration. Any read failure leaves the reader
// listing every node (see batchReader).
func (b *batchReader) prepare(ctx context.Context) {
	names, err := b.Nodes(ctx)
	if err != nil {
		return
	}
	feeders := []string{}
	for _, name := range names {
		n, err := b.Node(ctx, name)
		if err != nil {
			return
		}
		if len(n.AssignedModules()) > 0 || n.ArtifactStorePort() != "" {
			feeders = append(feeders, name)
		}
	}
	b.mu.Lock()
	b.feeders = feeders
	b.mu.Unlock()
}

// Nodes lists every registered node, read once.
func (b *batchReader) Nodes(ctx context.Context) ([]string, error) {
	b.mu.Lock()
	names := b.names
	b.mu.Unlock()
	if names == nil {
		var err error
		if names, err = b.h.Nodes(ctx); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.names = names
		b.mu.Unlock()
	}
	return slices.Clone(names), nil
}

func (b *batchReader) Node(ctx context.Context, name string) (commands.Node, error) {
	b.mu.Lock()
	n, ok := b.nodes[name]
	b.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := b.h.Node(ctx, name)
	if err != nil {
		return n, err
	}
	b.mu.Lock()
	b.nodes[name] = n
	b.mu.Unlock()
	return n, nil
}

func (b *batchReader) Module(ctx context.Context, name string) (commands.Module, error) {
	b.mu.Lock()
	m, ok := b.modules[name]
	b.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := b.h.Module(ctx, name)
	if err != nil {
		return m, err
	}
	b.mu.Lock()
	b.modules[name] = m
	b.mu.Unlock()
	return m, nil
}

// forNode is the reader for composing self: self fresh, the rest memoized,
// and once prepared only the nodes that matter to self's declaration.
func (b *batchReader) forNode(self string) commands.Reader { return selfFresh{b, self} }

type selfFresh struct {
	*batchReader
	self string
}

var _ commands.Reader = selfFresh{}

// Nodes lists the nodes self's compose must read: those that can change
// another node's declaration once prepared (compose adds self), every node
// otherwise.
func (s selfFresh) Nodes(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	feeders := s.feeders
	s.mu.Unlock()
	if feeders != nil {
		return slices.Clone(feeders), nil
	}
	return s.batchReader.Nodes(ctx)
}

func (s selfFresh) Node(ctx context.Context, name string) (commands.Node, error) {
	if name != s.self {
		return s.batchReader.Node(ctx, name)
	}
	n, err := s.h.Node(ctx, name)
	if err != nil {
		return n, err
	}
	s.mu.Lock()
	s.nodes[name] = n
	s.mu.Unlock()
	return n, nil
}
