package sim

import (
	"context"

	"meshplane/commands"
)

// lossyCache is one controller pass's compose reader under SetLossy: a
// commands.MeshCache over the pass's own cache with every lossy node read
// as "no modules", so that the composes of the nodes not lossy (all but a
// few) share one snapshot of the lossy mesh, as every compose shares the
// controller's snapshot when nothing is lossy. Without it each compose
// gathered and planned every node (lossyReader is not commands.Cached):
// N² plans a lossy pass, 92 s of a 1,000-node pass and hours at 10,000.
// A lossy node's own compose reads itself as it is, so it still goes
// through lossyReader.
type lossyCache struct {
	pass  *commands.MeshCache // the controller pass's cache it was made over
	cache *commands.MeshCache
}

// lossyAll is a Reader over a pass's cache answering every lossy node with
// no modules, as lossyReader does for every node but the one composed.
// Each node is read afresh (the pass cache's reader for that node), since
// the compose of a node reads its version through here.
type lossyAll struct {
	pass  *commands.MeshCache
	lossy map[string]bool // not changed while it is used: SetLossy replaces it
}

var _ commands.Reader = lossyAll{}

func (r lossyAll) Nodes(ctx context.Context) ([]string, error) { return r.pass.Nodes(ctx) }

func (r lossyAll) Module(ctx context.Context, name string) (commands.Module, error) {
	return r.pass.Module(ctx, name)
}

func (r lossyAll) Node(ctx context.Context, name string) (commands.Node, error) {
	n, err := r.pass.For(name).Node(ctx, name)
	if err != nil || !r.lossy[name] || len(n.Assigned) == 0 {
		return n, err
	}
	n.Assigned, n.Taken = nil, nil // the handler's maps are shared: replaced, never changed
	return n, nil
}

// lossyReaderFor is composeReader's reader for node while nodes are lossy
// (m.mu held): the shared lossy cache of r's pass when r is a pass's
// cache and node is not lossy, else lossyReader.
func (m *Mesh) lossyReaderFor(ctx context.Context, node string, r commands.Reader) commands.Reader {
	c, ok := r.(commands.Cached)
	if !ok || m.lossy[node] {
		return &lossyReader{r: r, target: node, lossy: m.lossy}
	}
	if m.lossyPass == nil || m.lossyPass.pass != c.Cache() {
		lc := commands.NewMeshCache(lossyAll{pass: c.Cache(), lossy: m.lossy})
		lc.Prepare(ctx)
		m.lossyPass = &lossyCache{pass: c.Cache(), cache: lc}
	}
	return m.lossyPass.cache.For(node)
}
