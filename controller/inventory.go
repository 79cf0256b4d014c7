package controller

// The day-one verbs: the lists of nodes and modules, one module, and the
// removals.

import (
	"context"
	"fmt"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
)

// NodeList is every registered node, with its assignments and its status.
func (c *Controller) NodeList(ctx context.Context) (api.NodeList, error) {
	if err := c.Sync(ctx); err != nil {
		return api.NodeList{}, err
	}
	names, err := c.handler.Nodes(ctx)
	if err != nil {
		return api.NodeList{}, err
	}
	out := api.NodeList{Nodes: make([]api.NodeSummary, 0, len(names))}
	for _, name := range names {
		n, err := c.handler.Node(ctx, name)
		if err != nil {
			return api.NodeList{}, err
		}
		s := api.NodeSummary{Node: name, Adopted: n.Adopted, Modules: n.AssignedModules()}
		if st, err := c.views.Status.Of(name); err == nil {
			s.Sync, s.Health = st.Sync, st.Health
		}
		out.Nodes = append(out.Nodes, s)
	}
	return out, nil
}

// ModuleList is every defined module.
func (c *Controller) ModuleList(ctx context.Context) (api.ModuleList, error) {
	names, err := c.handler.Modules(ctx)
	if err != nil {
		return api.ModuleList{}, err
	}
	out := api.ModuleList{Modules: make([]api.ModuleSummary, 0, len(names))}
	for _, name := range names {
		m, err := c.handler.Module(ctx, name)
		if err != nil {
			return api.ModuleList{}, err
		}
		nodes, err := c.handler.AssignedNodes(ctx, name)
		if err != nil {
			return api.ModuleList{}, err
		}
		out.Modules = append(out.Modules, api.ModuleSummary{
			Module: name, Nodes: orEmpty(nodes), Containers: len(m.Spec.Containers), Routes: orEmpty(m.Spec.Routes),
			Upgrade: m.Upgrade(), Builds: len(m.Recorded),
		})
	}
	return out, nil
}

// ModuleShow is one defined module: its spec, its nodes, its builds.
func (c *Controller) ModuleShow(ctx context.Context, module string) (api.ModuleShow, error) {
	if err := events.CheckName("module", module); err != nil {
		return api.ModuleShow{}, reject(commands.CodeInvalid, "%v", err)
	}
	m, err := c.handler.Module(ctx, module)
	if err != nil {
		return api.ModuleShow{}, err
	}
	if !m.Defined {
		why := "it is not defined"
		if m.Removed {
			why = "it was removed"
		}
		return api.ModuleShow{}, reject(commands.CodeModuleUnknown, "module %s: %s (mesh module list lists the modules)", module, why)
	}
	nodes, err := c.handler.AssignedNodes(ctx, module)
	if err != nil {
		return api.ModuleShow{}, err
	}
	out := api.ModuleShow{Module: module, Spec: m.Spec, Upgrade: m.Upgrade(), Nodes: []api.ModuleNode{}, Builds: []api.BuildView{}}
	for _, name := range nodes {
		n, err := c.handler.Node(ctx, name)
		if err != nil {
			return api.ModuleShow{}, err
		}
		out.Nodes = append(out.Nodes, api.ModuleNode{Node: name, Taken: n.Taken[module]})
	}
	for _, b := range m.Recorded {
		out.Builds = append(out.Builds, api.BuildView{
			Name: b.Name, Digest: b.Digest, Latest: m.Artifacts[b.Name] == b.Digest, Deployed: m.Deployed[b.Name] == b.Digest,
		})
	}
	return out, nil
}

// RemoveModule removes a module; with Release, releases it from every
// node first, in one request checked whole (all or nothing), then pushes
// what changed.
func (c *Controller) RemoveModule(ctx context.Context, req api.RemoveModuleRequest) (api.CommandResult, error) {
	var cs []commands.Command
	if req.Release {
		nodes, err := c.handler.AssignedNodes(ctx, req.Module)
		if err != nil {
			return api.CommandResult{}, err
		}
		for _, n := range nodes {
			cs = append(cs, commands.ReleaseModule{Module: req.Module, Node: n})
		}
	}
	return c.execute(ctx, req.Operator, append(cs, commands.RemoveModule{Module: req.Module})...)
}

// RemoveNode removes a node and revokes its bus users. With Drain, the
// modules assigned to it are released first and the emptied declaration
// pushed to it (its agent removes what ran there, if it is still
// connected), after the whole removal was checked; then node.removed,
// and the bus's revocation list is put at once (on a controller without
// a bus, at its next start).
func (c *Controller) RemoveNode(ctx context.Context, req api.RemoveNodeRequest) (api.CommandResult, error) {
	who, err := actor(req.Operator)
	if err != nil {
		return api.CommandResult{}, err
	}
	remove := commands.RemoveNode{Node: req.Node, Drain: req.Drain, By: who}
	if err := c.handler.Check(ctx, []commands.Command{remove}); err != nil {
		return api.CommandResult{}, err
	}
	var res api.CommandResult
	if req.Drain {
		n, err := c.handler.Node(ctx, req.Node)
		if err != nil {
			return api.CommandResult{}, err
		}
		var releases []commands.Command
		for _, m := range n.AssignedModules() {
			releases = append(releases, commands.ReleaseModule{Module: m, Node: req.Node})
		}
		remove.Released = n.AssignedModules()
		for _, r := range releases {
			// One at a time: a request names a stream once.
			got, err := c.execute(ctx, req.Operator, r)
			res.Results = append(res.Results, got.Results...)
			if err != nil {
				return res, err
			}
		}
	}
	got, err := c.execute(ctx, req.Operator, remove)
	res.Results = append(res.Results, got.Results...)
	if err != nil {
		return res, err
	}
	c.pushMu.Lock()
	delete(c.pushed, req.Node)
	c.pushMu.Unlock()
	if m, err := c.minter(); err == nil {
		list, err := c.Revocations(ctx)
		if err != nil {
			return res, err
		}
		if err := m.Revoke(ctx, list); err != nil {
			return res, fmt.Errorf("controller: remove %s: recorded, but the bus did not take the revocation (the next start carries it): %w", req.Node, err)
		}
	}
	return res, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
