package controller

// What a query names must exist: a node, a module, an event type, a
// resource. A name that matches nothing is a rejection (exit 3 in the CLI,
// 404 or 422 from the API), never an empty answer that reads as "nothing
// happened".

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/projections"
)

// known reports whether stream holds any event: a node or a module that
// history knows, registered now or removed since.
func (c *Controller) known(ctx context.Context, stream string) (bool, error) {
	evs, err := c.store.ReadStream(ctx, stream, 0, 1)
	if err != nil {
		return false, fmt.Errorf("controller: read %s: %w", stream, err)
	}
	return len(evs) > 0, nil
}

// checkNodes refuses a node no event names (node-unknown).
func (c *Controller) checkNodes(ctx context.Context, nodes ...string) error {
	for _, n := range nodes {
		if n == "" {
			continue
		}
		if _, err := c.views.Status.Of(n); err == nil {
			continue
		}
		ok, err := c.known(ctx, events.NodeStream(n))
		if err != nil {
			return err
		}
		if !ok {
			return reject(commands.CodeNodeUnknown, "node %s: no event names it (mesh node list lists the nodes)", n)
		}
	}
	return nil
}

// checkModule refuses a module no event of its stream names
// (module-unknown).
func (c *Controller) checkModule(ctx context.Context, module string) error {
	if module == "" {
		return nil
	}
	ok, err := c.known(ctx, events.ModuleStream(module))
	if err != nil {
		return err
	}
	if !ok {
		return reject(commands.CodeModuleUnknown, "module %s: no event names it (mesh module list lists the modules)", module)
	}
	return nil
}

// TimelineTypes is what a timeline's --type selects: the type itself when
// it is one this build knows, else every known type it is a prefix of
// ("apply" is apply.reported, "declaration." every declaration.* type). A
// prefix of none is refused (invalid), naming the types.
func TimelineTypes(reg *events.Registry, typ string) ([]string, error) {
	if typ == "" || reg.Known(typ) {
		return []string{typ}, nil
	}
	var out []string
	for _, t := range reg.Types() {
		if strings.HasPrefix(t, typ) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, reject(commands.CodeInvalid, "no event type is or starts with %q: the types are %s", typ, strings.Join(reg.Types(), ", "))
	}
	return out, nil
}

// checkTimeline refuses a timeline request naming what matches nothing,
// and returns the types it selects.
func (c *Controller) checkTimeline(ctx context.Context, req api.TimelineRequest) ([]string, error) {
	types, err := TimelineTypes(c.reg, req.Type)
	if err != nil {
		return nil, err
	}
	if err := c.checkNodes(ctx, req.Node); err != nil {
		return nil, err
	}
	if err := c.checkModule(ctx, req.Module); err != nil {
		return nil, err
	}
	return types, nil
}

// queryTypes is query over each of types, merged in position order, at
// most f.Limit of them (the newest, or the oldest when f.Forward), as one
// query of a filter selecting every one of the types would answer.
func queryTypes(query func(projections.Filter) []projections.Entry, f projections.Filter, types []string) []projections.Entry {
	if len(types) == 1 {
		f.Type = types[0]
		return query(f)
	}
	var all []projections.Entry
	for _, t := range types {
		f.Type = t
		all = append(all, query(f)...)
	}
	slices.SortFunc(all, func(a, b projections.Entry) int { return cmp.Compare(a.Position, b.Position) })
	if f.Limit > 0 && len(all) > f.Limit {
		if f.Forward {
			all = all[:f.Limit]
		} else {
			all = all[len(all)-f.Limit:]
		}
	}
	return all
}

// checkResource refuses, in why, a resource that no apply touched and no
// declaration of the node declared (resource-unknown).
func (c *Controller) checkResource(node, resource string, touches int) error {
	if touches > 0 || c.views.Timeline.Declared(node, resource) {
		return nil
	}
	return reject(api.CodeResourceUnknown, "resource %s on %s: no declaration of the node declared it and no apply touched it", resource, node)
}
