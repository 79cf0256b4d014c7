package controller

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/internal/safego"
)

// reject is a rejection with the given code.
func reject(code, format string, args ...any) error {
	return &commands.Rejection{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// actor is the events' actor for an operator's request, whose name
// commands.CheckOperator checks (the API's and the CLI's alike).
func actor(operator string) (string, error) {
	if err := commands.CheckOperator(operator); err != nil {
		return "", err
	}
	return "operator:" + operator, nil
}

// execute runs cs as operator, in order, after checking them together when
// there are several (all or nothing); then waits for the projections to
// fold what they appended, and pushes what changed on the nodes they touch.
func (c *Controller) execute(ctx context.Context, operator string, cs ...commands.Command) (api.CommandResult, error) {
	if c.standby.Load() {
		return api.CommandResult{}, errStandby()
	}
	who, err := actor(operator)
	if err != nil {
		return api.CommandResult{}, err
	}
	if len(cs) == 0 {
		return api.CommandResult{}, reject(commands.CodeInvalid, "nothing to do: the request names nothing")
	}
	res, last, err := c.append(ctx, who, cs)
	if err != nil {
		return res, err
	}
	if err := c.syncTo(ctx, last); err != nil {
		return res, err
	}
	if c.holdDefines && onlyDefines(cs) {
		c.holding.Store(true) // it waits for mesh push (Config.HoldDefines)
		return res, nil
	}
	if nodes := touched(cs); c.pub != nil && (nodes == nil || len(nodes) > 0) {
		if _, err := c.pushNodes(ctx, nodes, false); err != nil {
			// The commands are recorded; the next pass pushes again.
			c.log.Error("controller: push after command", "error", err)
		}
	}
	return res, nil
}

// onlyDefines reports whether every one of cs is a module definition.
func onlyDefines(cs []commands.Command) bool {
	for _, c := range cs {
		if _, ok := c.(commands.DefineModule); !ok {
			return false
		}
	}
	return true
}

// append checks and appends cs under the command lock, all or nothing
// (commands.Handler.ExecuteAll: every command is decided first, each against
// the state the ones before it would leave, and one refusal appends none;
// the CLI's local mode goes through here too). It returns what each appended
// and the last position.
func (c *Controller) append(ctx context.Context, who string, cs []commands.Command) (api.CommandResult, uint64, error) {
	c.cmdMu.Lock()
	defer c.cmdMu.Unlock()
	// A request naming one stream twice is ambiguous (which value of a
	// setting wins?): refused whole.
	seen := map[string]bool{}
	for _, cmd := range cs {
		if seen[cmd.Stream()] {
			return api.CommandResult{}, 0, reject(commands.CodeInvalid, "%s is named twice in one request", cmd.Stream())
		}
		seen[cmd.Stream()] = true
	}
	results, err := c.handler.ExecuteAll(ctx, who, cs)
	res := api.CommandResult{Results: make([]api.Appended, 0, len(cs))}
	var last uint64
	for i, evs := range results {
		a := api.Appended{Stream: cs[i].Stream(), Events: make([]api.EventRef, len(evs))}
		for j, ev := range evs {
			a.Events[j] = refOf(ev)
			last = max(last, ev.Position)
		}
		res.Results = append(res.Results, a)
	}
	if err != nil && len(results) > 0 {
		return res, last, fmt.Errorf("controller: %d of %d commands appended, then: %w", len(results), len(cs), err)
	}
	return res, last, err
}

// touched returns the nodes whose declarations cs may change: the
// registered node alone for a registration (a node with no modules routes
// no name), every node (nil) for anything else, since a module's routes,
// an assignment or a node's address reach every node's roster. Only the
// declarations whose digest changed are pushed. A token command touches
// none (an empty, non-nil list: nothing is pushed).
func touched(cs []commands.Command) []string {
	var nodes []string
	for _, cmd := range cs {
		switch cmd := cmd.(type) {
		case commands.RegisterNode:
			nodes = append(nodes, cmd.Node)
		case commands.CreateToken, commands.RevokeToken:
			// A token is in no node's declaration.
		default:
			return nil
		}
	}
	if nodes == nil {
		return []string{}
	}
	return nodes
}

// RegisterNodes registers several nodes, all or none.
func (c *Controller) RegisterNodes(ctx context.Context, req api.RegisterNodesRequest) (api.CommandResult, error) {
	cs := make([]commands.Command, len(req.Nodes))
	for i, n := range req.Nodes {
		cs[i] = commands.RegisterNode{Node: n}
	}
	return c.execute(ctx, req.Operator, cs...)
}

// AdoptNode marks a node as adopted.
func (c *Controller) AdoptNode(ctx context.Context, req api.NodeRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.AdoptNode{Node: req.Node})
}

// SetSetting sets or clears a node setting.
func (c *Controller) SetSetting(ctx context.Context, req api.SetSettingRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.SetNodeSetting{Node: req.Node, Key: req.Key, Value: req.Value})
}

// DefineModules defines several modules, all or none.
func (c *Controller) DefineModules(ctx context.Context, req api.DefineModulesRequest) (api.CommandResult, error) {
	cs := make([]commands.Command, len(req.Modules))
	for i, m := range req.Modules {
		cs[i] = commands.DefineModule{Module: m.Module, Spec: m.Spec}
	}
	return c.execute(ctx, req.Operator, cs...)
}

// Assign assigns a module to a node.
func (c *Controller) Assign(ctx context.Context, req api.ModuleNodeRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.AssignModule{Module: req.Module, Node: req.Node})
}

// Take takes an assigned module on an adopted node.
func (c *Controller) Take(ctx context.Context, req api.ModuleNodeRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.TakeModule{Module: req.Module, Node: req.Node})
}

// Release releases a module from a node.
func (c *Controller) Release(ctx context.Context, req api.ModuleNodeRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.ReleaseModule{Module: req.Module, Node: req.Node})
}

// RecordArtifact records a build of a module's artifact.
func (c *Controller) RecordArtifact(ctx context.Context, req api.RecordArtifactRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.RecordArtifact{Module: req.Module, Name: req.Name, Digest: req.Digest})
}

// Push composes and pushes now, changed or not: one node, or every node.
// A node that does not compose, or whose send fails, has its error in its
// result (and recorded on its stream); an unknown node is a rejection.
func (c *Controller) Push(ctx context.Context, req api.PushRequest) (api.PushResponse, error) {
	if c.standby.Load() {
		return api.PushResponse{}, errStandby()
	}
	if c.pub == nil {
		return api.PushResponse{}, errors.New("controller: push: no bus is attached (run 'mesh up', or point the CLI at the controller)")
	}
	var nodes []string
	if req.Node != "" {
		nodes = []string{req.Node}
	}
	if req.Node == "" {
		c.holding.Store(false) // a held definition is pushed now
	}
	rs, err := c.pushNodes(ctx, nodes, true)
	if err != nil {
		return api.PushResponse{}, err
	}
	return api.PushResponse{Pushes: rs}, nil
}

// PushChanged is the pass the controller makes at start and every
// interval, now: every registered node composed once, and pushed when its
// digest differs from the last pushed, or its compose failure recorded
// when it differs from the last recorded (commands.DecidePush). Each
// node's failure is in its result; only nodes that were pushed or recorded
// have one. The simulator's passes are this one.
func (c *Controller) PushChanged(ctx context.Context) ([]api.PushResult, error) {
	if c.standby.Load() {
		return nil, errStandby()
	}
	if c.pub == nil {
		return nil, errors.New("controller: push: no bus is attached (run 'mesh up', or point the CLI at the controller)")
	}
	c.holding.Store(false) // a held definition is pushed now
	return c.pushNodes(ctx, nil, false)
}

// pushWorkers bounds the nodes a push composes and hands to the bus at
// once. Each node's push is a compose, an append, a put waiting for the
// bus's acknowledgement and another append: with several in flight, the
// puts overlap and the appends share the store's commits (boltstore and
// pgstore group concurrent appends into one commit).
const pushWorkers = 32

// pushNodes composes each of nodes (every registered node when nil) once
// and pushes the declarations whose digest differs from the last pushed,
// and records the compose failures that differ from the last recorded, or
// every one of them when force is set (commands.DecidePush decides, on the
// composition it then pushes): up to pushWorkers nodes at once, each node's
// push as commands.Handler.PushNode records it (its own stream, its
// expected version, its failure recorded), so nodes pushed together are
// recorded exactly as one after the other would be. The results are in the order of
// nodes. It fails only when the node list cannot be read, when ctx ends
// before every node was pushed (with the results so far), or on a
// rejection for a node named alone; each node's failure is in its result.
func (c *Controller) pushNodes(ctx context.Context, nodes []string, force bool) ([]api.PushResult, error) {
	c.pushMu.Lock()
	defer c.pushMu.Unlock()
	if err := c.Sync(ctx); err != nil {
		return nil, err
	}
	if nodes == nil {
		var err error
		if nodes, err = c.handler.Nodes(ctx); err != nil {
			return nil, fmt.Errorf("controller: push: %w", err)
		}
	}
	cache := commands.NewMeshCache(c.handler)
	cache.Prepare(ctx)
	// What was last pushed is read here, before the workers start: pushed
	// is read and written by this goroutine alone. A push now knows none.
	last := make([]commands.LastPush, len(nodes))
	if !force {
		for i, n := range nodes {
			last[i] = commands.LastPush{Digest: c.lastPushed(n), Failure: c.lastComposeFailure(n)}
		}
	}
	outcomes := make([]pushOutcome, len(nodes))
	var g errgroup.Group
	g.SetLimit(pushWorkers)
	for i, n := range nodes {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			// A node whose push panics (its compose, the bus) fails
			// alone: its result says so, the others are pushed.
			err := safego.Call("controller.push", c.log, func() error {
				var r commands.Reader = cache.For(n)
				if c.readers != nil {
					r = c.readers(n, r)
				}
				outcomes[i] = c.pushNode(ctx, r, n, force, last[i])
				return nil
			})
			if err != nil {
				outcomes[i] = pushOutcome{ran: true, pushed: true, res: api.PushResult{Node: n}, err: err}
			}
			return nil
		})
	}
	_ = g.Wait() // the workers return no error: each node's is in its outcome
	var out []api.PushResult
	cancelled := false
	for i, o := range outcomes {
		switch {
		case !o.ran:
			cancelled = true
			continue
		case !o.pushed:
			continue
		}
		if o.err != nil {
			if len(nodes) == 1 && errors.Is(o.err, commands.ErrRejected) {
				return nil, o.err
			}
			o.res.Error = o.err.Error()
			c.log.Warn("controller: push", "node", nodes[i], "error", o.err)
		} else {
			c.pushed[nodes[i]] = o.res.Digest
		}
		out = append(out, o.res)
	}
	if cancelled {
		return out, ctx.Err()
	}
	return out, nil
}

// pushOutcome is what pushNode did for one node.
type pushOutcome struct {
	ran    bool // false: ctx ended before the node's turn
	pushed bool // false: nothing to push (unchanged, failure already recorded, unknown)
	res    api.PushResult
	err    error // the push's failure (also recorded on the node's stream)
}

// pushNode composes node through r once and does what commands.DecidePush
// decides against last: pushes that composition, records its failure, or
// nothing. An unregistered node is nothing to push to, unless it was
// named (force): then its rejection is the push's error. It runs on a push
// worker: it reads the projections and writes nothing of the controller's
// own.
func (c *Controller) pushNode(ctx context.Context, r commands.Reader, node string, force bool, last commands.LastPush) pushOutcome {
	if ctx.Err() != nil {
		return pushOutcome{}
	}
	send := func(ctx context.Context, d declaration.Declaration) error { return c.pub.PutDeclaration(ctx, d) }
	act, d, err := c.handler.PushNode(ctx, node, r, last, send)
	switch {
	case act == commands.PushSkip, act == commands.PushRefused && !force:
		return pushOutcome{ran: true}
	}
	return pushOutcome{ran: true, pushed: true, res: api.PushResult{Node: node, Declaration: d.ID, Digest: d.Digest}, err: err}
}

// lastPushed is the digest of the last declaration handed to the bus for
// node: remembered since start, or else what the projections recorded.
// Called with pushMu held, after Sync.
func (c *Controller) lastPushed(node string) string {
	if d, ok := c.pushed[node]; ok {
		return d
	}
	st, err := c.views.Status.Of(node)
	if err != nil || st.Pushed == nil {
		return ""
	}
	c.pushed[node] = st.Pushed.Digest
	return st.Pushed.Digest
}

// lastComposeFailure is the error of node's last compose, when it failed
// and is the node's last compose attempt ("" otherwise): an unforced pass
// need not record the same failure again. Called after Sync.
func (c *Controller) lastComposeFailure(node string) string {
	f, ok := c.views.Status.ComposeFailure(node)
	if !ok {
		return ""
	}
	return f.Error
}
