package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/projections"
)

// queryErr turns the read side's "unknown" sentinels into the rejections
// the CLI shows (and the API sends as 404); other errors pass unchanged.
func queryErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, projections.ErrUnknownNode):
		return &commands.Rejection{Code: commands.CodeNodeUnknown, Msg: err.Error()}
	case errors.Is(err, projections.ErrUnknownDeclaration):
		return &commands.Rejection{Code: api.CodeDeclarationUnknown, Msg: err.Error()}
	}
	return err
}

// skipped is what the projections could not fold.
func (c *Controller) skipped() api.Skipped {
	kept, total := c.runner.Failures()
	s := api.Skipped{Failures: mapSlice(kept, failureOf), FailuresTotal: total}
	if u := c.runner.Unknown(); len(u) > 0 {
		s.UnknownTypes = u
	}
	if total == 0 {
		s.Failures = nil
	}
	return s
}

// nodesOr returns names, or every node the status projection knows.
func (c *Controller) nodesOr(names []string) []string {
	if len(names) > 0 {
		return names
	}
	return c.views.Status.Nodes()
}

// Status is each node's status.
func (c *Controller) Status(ctx context.Context, req api.StatusRequest) (api.StatusResponse, error) {
	if err := c.Sync(ctx); err != nil {
		return api.StatusResponse{}, err
	}
	out := api.StatusResponse{Nodes: []api.NodeStatus{}}
	for _, n := range c.nodesOr(req.Nodes) {
		st, err := c.views.Status.Of(n)
		if err != nil {
			return api.StatusResponse{}, queryErr(err)
		}
		ns := statusOf(st)
		c.withLiveness(&ns)
		out.Nodes = append(out.Nodes, ns)
	}
	out.Skipped = c.skipped()
	return out, nil
}

// NodeShow is one node's status and holds.
func (c *Controller) NodeShow(ctx context.Context, node string) (api.NodeShow, error) {
	if err := c.Sync(ctx); err != nil {
		return api.NodeShow{}, err
	}
	st, err := c.views.Status.Of(node)
	if err != nil {
		return api.NodeShow{}, queryErr(err)
	}
	holds, err := c.views.Holds.Of(node)
	if err != nil && !errors.Is(err, projections.ErrUnknownNode) {
		return api.NodeShow{}, queryErr(err)
	}
	if holds == nil { // no apply reported yet: no holds
		holds = []projections.Hold{}
	}
	// The access part is folded by the write side; a stream holding an
	// event that does not decode (which the projections skip and count) is
	// shown without it, as the rest of the answer is.
	var access *api.NodeAccess
	n, err := c.handler.Node(ctx, node)
	switch {
	case errors.Is(err, events.ErrInvalid):
	case err != nil:
		return api.NodeShow{}, err
	default:
		access = accessOf(n.Access)
	}
	ns := statusOf(st)
	c.withLiveness(&ns)
	return api.NodeShow{Status: ns, Holds: mapSlice(holds, holdOf), Access: access}, nil
}

// Resources is every resource of node's last applied declaration, with
// its state.
func (c *Controller) Resources(ctx context.Context, node string) (api.NodeResources, error) {
	if err := c.Sync(ctx); err != nil {
		return api.NodeResources{}, err
	}
	r, err := c.views.Status.Resources(node)
	if err != nil {
		return api.NodeResources{}, queryErr(err)
	}
	return resourcesOf(r), nil
}

// Timeline is one page of the filtered timeline (see api.TimelineRequest).
func (c *Controller) Timeline(ctx context.Context, req api.TimelineRequest) (api.TimelinePage, error) {
	switch {
	case req.Limit < 0 || req.Limit > api.MaxTimelineLimit:
		return api.TimelinePage{}, reject(commands.CodeInvalid, "limit %d: give 1 to %d (0 for %d)", req.Limit, api.MaxTimelineLimit, api.DefaultTimelineLimit)
	case req.After > 0 && req.Before > 0 && req.Before <= req.After+1:
		return api.TimelinePage{}, reject(commands.CodeInvalid, "after %d and before %d leave no position between them", req.After, req.Before)
	}
	if req.Limit == 0 {
		req.Limit = api.DefaultTimelineLimit
	}
	if err := c.Sync(ctx); err != nil {
		return api.TimelinePage{}, err
	}
	types, err := c.checkTimeline(ctx, req)
	if err != nil {
		return api.TimelinePage{}, err
	}
	var qerr error
	entries, next := page(func(f projections.Filter) []projections.Entry {
		return queryTypes(func(f projections.Filter) []projections.Entry {
			es, err := c.queryTimeline(f)
			qerr = cmp.Or(qerr, err)
			return es
		}, f, types)
	}, req)
	if qerr != nil {
		return api.TimelinePage{}, qerr
	}
	if entries == nil {
		entries = []projections.Entry{}
	}
	return api.TimelinePage{Entries: entriesOf(entries), Next: next, Skipped: c.skipped()}, nil
}

// page picks req's page with one bounded query: Limit+1 matches from the
// cursor, the extra one only telling whether there is a next page. The
// timeline walks its narrowest index from the cursor (Timeline.Query), so a
// page costs the same wherever it lies in the history.
func page(query func(projections.Filter) []projections.Entry, req api.TimelineRequest) ([]projections.Entry, uint64) {
	f := filterOf(req)
	f.After, f.Before, f.Forward, f.Limit = req.After, req.Before, req.Forwards(), req.Limit+1
	got := query(f)
	if len(got) <= req.Limit {
		return got, 0
	}
	if f.Forward {
		got = got[:req.Limit]
		return got, got[len(got)-1].Position
	}
	got = got[1:]
	return got, got[0].Position
}

// Why is every apply that touched resource on node, with its push, the
// commands behind it, the deploy of the build it runs, and each changed
// field's old and new value (from the node's stream: the specs the
// timeline does not keep).
func (c *Controller) Why(ctx context.Context, req api.WhyRequest) (api.WhyResponse, error) {
	if w, err := c.wholeOf(); w != nil || err != nil {
		if err != nil {
			return api.WhyResponse{}, err
		}
		return w.Why(ctx, req) // resumed: the whole history is there
	}
	if c.tlQuery != nil {
		return api.WhyResponse{}, errTimelineOnDisk("why")
	}
	if err := c.Sync(ctx); err != nil {
		return api.WhyResponse{}, err
	}
	touches, err := c.views.Timeline.Why(req.Node, req.Resource)
	if err != nil {
		return api.WhyResponse{}, queryErr(err)
	}
	if err := c.checkResource(req.Node, req.Resource, len(touches)); err != nil {
		return api.WhyResponse{}, err
	}
	decl, err := readDeclared(ctx, c.store, c.reg, req.Node)
	if err != nil {
		return api.WhyResponse{}, fmt.Errorf("why %s on %s: %w", req.Resource, req.Node, err)
	}
	out := api.WhyResponse{Node: req.Node, Resource: req.Resource, Touches: make([]api.WhyTouch, len(touches))}
	if st, err := c.views.Status.Of(req.Node); err == nil {
		if cs, ok := st.Containers[req.Resource]; ok {
			e := api.ContainerStatus(cs)
			out.Engine = &e
		}
	}
	byCorr := map[string][]projections.Entry{}
	for i, t := range touches {
		out.Touches[i].Touch = touchOf(t)
		deploy, err := deployBehind(c.views.Timeline, req.Node, req.Resource, t)
		if err != nil {
			return api.WhyResponse{}, fmt.Errorf("controller: why %s on %s: %w", req.Resource, req.Node, err)
		}
		out.Touches[i].Deploy = entriesOf(deploy)
		// A run of applies of one declaration (most touches) shares the
		// commands behind it, and its changes when the fields are the same.
		if prev := i - 1; prev >= 0 && touches[prev].Entry.Declaration == t.Entry.Declaration {
			out.Touches[i].Commands = out.Touches[prev].Commands
			if slices.Equal(touches[prev].Fields, t.Fields) && touches[prev].Action == t.Action {
				out.Touches[i].Changes = out.Touches[prev].Changes
			} else {
				out.Touches[i].Changes = decl.changes(req.Resource, t)
			}
		} else {
			out.Touches[i].Changes = decl.changes(req.Resource, t)
			cmds, err := c.views.Timeline.CommandsBehind(req.Node, req.Resource, t.Entry.Position)
			if err != nil {
				return api.WhyResponse{}, fmt.Errorf("controller: why %s on %s: %w", req.Resource, req.Node, err)
			}
			out.Touches[i].Commands = entriesOf(cmds)
		}
		if t.Entry.Correlation == "" {
			continue
		}
		same, ok := byCorr[t.Entry.Correlation]
		if !ok { // once a correlation: a run's touches share one (its entries are read back from the store)
			if same, err = c.views.Timeline.Read(projections.Filter{Node: req.Node, Correlation: t.Entry.Correlation}); err != nil {
				return api.WhyResponse{}, fmt.Errorf("controller: why %s on %s: %w", req.Resource, req.Node, err)
			}
			byCorr[t.Entry.Correlation] = same
		}
		for _, en := range same {
			if en.Position != t.Entry.Position {
				out.Touches[i].Push = append(out.Touches[i].Push, entryOf(en))
			}
		}
	}
	return out, nil
}

// Roster is node's current declaration.
func (c *Controller) Roster(ctx context.Context, node string) (api.ComposedDecl, error) {
	if err := c.Sync(ctx); err != nil {
		return api.ComposedDecl{}, err
	}
	d, err := c.views.Roster.Current(node)
	return composedOf(d), queryErr(err)
}

// RosterHistory is every declaration composed for node, each with what
// changed since the one before.
func (c *Controller) RosterHistory(ctx context.Context, node string) (api.RosterHistory, error) {
	if w, err := c.wholeOf(); w != nil || err != nil {
		if err != nil {
			return api.RosterHistory{}, err
		}
		return w.RosterHistory(ctx, node) // resumed: every declaration is there
	}
	if err := c.Sync(ctx); err != nil {
		return api.RosterHistory{}, err
	}
	h, err := c.views.Roster.History(node)
	if err != nil {
		return api.RosterHistory{}, queryErr(err)
	}
	out := api.RosterHistory{Node: node, Declarations: make([]api.RosterHistoryEntry, len(h))}
	for i, d := range h {
		out.Declarations[i].ComposedDecl = composedOf(d)
		if i == 0 {
			continue
		}
		df, err := c.views.Roster.Diff(node, h[i-1].Declaration, d.Declaration)
		if err != nil {
			return api.RosterHistory{}, queryErr(fmt.Errorf("controller: roster history of %s: %w", node, err))
		}
		wire := diffOf(df)
		out.Declarations[i].Changed = &wire
	}
	return out, nil
}

// RosterDiff is what changed between two of a node's declarations.
func (c *Controller) RosterDiff(ctx context.Context, req api.RosterDiffRequest) (api.RosterDiff, error) {
	if w, err := c.wholeOf(); w != nil || err != nil {
		if err != nil {
			return api.RosterDiff{}, err
		}
		return w.RosterDiff(ctx, req) // resumed: every declaration is there
	}
	if err := c.Sync(ctx); err != nil {
		return api.RosterDiff{}, err
	}
	d, err := c.views.Roster.Diff(req.Node, req.From, req.To)
	if err != nil {
		return api.RosterDiff{}, queryErr(err)
	}
	return diffOf(d), nil
}

// Churn is each node's churn episodes.
func (c *Controller) Churn(ctx context.Context, req api.ChurnRequest) (api.ChurnResponse, error) {
	if err := c.Sync(ctx); err != nil {
		return api.ChurnResponse{}, err
	}
	if err := c.checkNodes(ctx, req.Nodes...); err != nil {
		return api.ChurnResponse{}, err
	}
	nodes := c.nodesOr(req.Nodes) // a node without events has no episodes, as in local mode
	out := api.ChurnResponse{Nodes: make([]api.NodeChurn, len(nodes))}
	for i, n := range nodes {
		eps := c.views.Churn.Episodes(n)
		if eps == nil {
			eps = []projections.Episode{}
		}
		out.Nodes[i] = api.NodeChurn{Node: n, Episodes: mapSlice(eps, episodeOf)}
	}
	return out, nil
}
