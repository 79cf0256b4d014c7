package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
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
	if c.deferDefines && onlyDefines(cs) {
		c.deferring.Store(true) // it waits for mesh push (Config.DeferDefines)
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
		c.deferring.Store(false) // a deferred definition is pushed now
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
// have one. Every event it appends names the pass (events.PassCause). The
// simulator's passes are this one.
func (c *Controller) PushChanged(ctx context.Context) ([]api.PushResult, error) {
	if c.standby.Load() {
		return nil, errStandby()
	}
	if c.pub == nil {
		return nil, errors.New("controller: push: no bus is attached (run 'mesh up', or point the CLI at the controller)")
	}
	c.deferring.Store(false) // a deferred definition is pushed now
	return c.pushNodes(ctx, nil, false)
}

// pushWorkers bounds the nodes a push composes, records or hands to the
// bus at once, in each of its stages (pushNodes). A node's record waits
// for the store's commit: with many in flight, one commit takes them all
// (boltstore and pgstore group concurrent appends into one commit; 1,024
// is boltstore's queue).
const pushWorkers = 1024

// pushNodes composes each of nodes (every registered node when nil) once
// and pushes the declarations whose digest differs from the last pushed,
// and records the compose failures that differ from the last recorded, or
// every one of them when force is set (commands.DecidePush decides, on the
// composition it then pushes). It runs in three stages, each over every
// node at once (up to pushWorkers), so that a push of N nodes waits for
// about three commits and one round trip to the bus, not N of each:
//
//  1. stage (commands.Handler.StagePush): compose from the push's one
//     reading of the mesh (a commands.MeshCache), decide, and record
//     declaration.composed (or the compose's failure) on the node's stream
//     at the version compose read;
//  2. send: every staged declaration handed to the bus, in one pipelined
//     batch when the Publisher is a BatchPublisher, else one put a node;
//  3. finish (commands.Handler.FinishPush): each send's outcome recorded,
//     declaration.pushed or declaration.push-failed.
//
// So every node's push is recorded on its own stream exactly as it would
// be alone, and in the same order: its declaration.composed before its
// declaration is on the bus, what became of the put after. The results are
// in the order of nodes. It fails only when the node list cannot be read,
// when ctx ends before every node was staged (with the results so far), or
// on a rejection for a node named alone; each node's failure is in its
// result.
func (c *Controller) pushNodes(ctx context.Context, nodes []string, force bool) ([]api.PushResult, error) {
	c.pushMu.Lock()
	defer c.pushMu.Unlock()
	if err := c.Sync(ctx); err != nil {
		return nil, err
	}
	// A pass over every node records its id on each event it appends
	// (events.PassCause): a reader of the history knows which pass each
	// compose and send belongs to. A push of named nodes is no such pass.
	pass := ""
	if nodes == nil {
		var err error
		if nodes, err = c.handler.Nodes(ctx); err != nil {
			return nil, fmt.Errorf("controller: push: %w", err)
		}
		pass = events.PassCause(events.NewID())
	}
	cache := commands.NewMeshCache(c.handler)
	cache.Prepare(ctx)
	// What was last pushed is read here, before the workers start: pushed
	// is read and written by this goroutine alone. A push now knows none.
	last := make([]commands.LastPush, len(nodes))
	for i, n := range nodes {
		last[i].Pass = pass
		if !force {
			last[i].Digest, last[i].Failure = c.lastPushed(n), c.lastComposeFailure(n)
		}
	}
	p := &push{c: c, nodes: nodes, force: force,
		staged: make([]commands.StagedPush, len(nodes)), outcomes: make([]pushOutcome, len(nodes))}
	p.stage(ctx, cache, last)
	p.finish(ctx, p.send(ctx))
	return c.pushResults(ctx, nodes, p.outcomes)
}

// pushResults remembers what was pushed and returns the results of the
// nodes that were pushed or recorded, in order (see pushNodes).
func (c *Controller) pushResults(ctx context.Context, nodes []string, outcomes []pushOutcome) ([]api.PushResult, error) {
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

// pushOutcome is what a push did for one node.
type pushOutcome struct {
	ran    bool // false: ctx ended before the node's turn
	pushed bool // false: nothing to push (unchanged, failure already recorded, unknown)
	res    api.PushResult
	err    error // the push's failure (also recorded on the node's stream, but for a panic)
}

// push is one pushNodes in progress: per node, its stage and its outcome,
// each written by the node's worker alone.
type push struct {
	c        *Controller
	nodes    []string
	force    bool
	staged   []commands.StagedPush
	outcomes []pushOutcome
}

// each runs fn(i) for each of idx, up to pushWorkers at once. A node whose
// fn panics (its compose, the bus) fails alone: its outcome says so, its
// stage no longer sends, and the others go on.
func (p *push) each(idx []int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(pushWorkers)
	for _, i := range idx {
		g.Go(func() error {
			if err := safego.Call("controller.push", p.c.log, func() error { fn(i); return nil }); err != nil {
				p.panicked(i, err)
			}
			return nil
		})
	}
	_ = g.Wait() // the workers return no error: each node's is in its outcome
}

// panicked makes err, a panic, node i's outcome: nothing more is sent or
// recorded for it.
func (p *push) panicked(i int, err error) {
	p.outcomes[i] = pushOutcome{ran: true, pushed: true, res: api.PushResult{Node: p.nodes[i]}, err: err}
	p.staged[i].Action = commands.PushSkip
}

// stage composes and decides every node through cache, and records what
// comes before its send (commands.Handler.StagePush). An unregistered node
// is nothing to push to, unless it was named (force): then its rejection
// is the push's error. A node whose turn comes after ctx ended is not run.
func (p *push) stage(ctx context.Context, cache *commands.MeshCache, last []commands.LastPush) {
	all := make([]int, len(p.nodes))
	for i := range all {
		all[i] = i
	}
	p.each(all, func(i int) {
		if ctx.Err() != nil {
			return
		}
		n := p.nodes[i]
		var r commands.Reader = cache.For(n)
		if p.c.readers != nil {
			r = p.c.readers(n, r)
		}
		st, err := p.c.handler.StagePush(ctx, n, r, last[i])
		p.staged[i] = st
		o := pushOutcome{ran: true}
		if st.Action != commands.PushSkip && (st.Action != commands.PushRefused || p.force) {
			d := st.Declaration()
			o.pushed, o.res, o.err = true, api.PushResult{Node: n, Declaration: d.ID, Digest: d.Digest}, err
		}
		p.outcomes[i] = o
	})
}

// sendable returns the nodes staged to send: recorded, not failed.
func (p *push) sendable() []int {
	var idx []int
	for i, st := range p.staged {
		if st.Action == commands.PushSend && p.outcomes[i].ran && p.outcomes[i].err == nil {
			idx = append(idx, i)
		}
	}
	return idx
}

// send hands every staged declaration to the bus and returns, per node,
// its put's outcome: one batch for a BatchPublisher, else a put a node.
func (p *push) send(ctx context.Context) map[int]error {
	idx := p.sendable()
	errs := make(map[int]error, len(idx))
	if len(idx) == 0 {
		return errs
	}
	bp, ok := p.c.pub.(BatchPublisher)
	if !ok {
		var mu sync.Mutex
		p.each(idx, func(i int) {
			err := p.c.pub.PutDeclaration(ctx, p.staged[i].Declaration())
			mu.Lock()
			errs[i] = err
			mu.Unlock()
		})
		return errs
	}
	ds := make([]declaration.Declaration, len(idx))
	for j, i := range idx {
		ds[j] = p.staged[i].Declaration()
	}
	var put []error
	if err := safego.Call("controller.push", p.c.log, func() error { put = bp.PutDeclarations(ctx, ds); return nil }); err != nil {
		for _, i := range idx {
			p.panicked(i, err)
		}
		return errs
	}
	for j, i := range idx {
		errs[i] = nil
		if put != nil {
			errs[i] = put[j]
		}
	}
	return errs
}

// finish records each send's outcome on its node's stream
// (commands.Handler.FinishPush). A successful send whose stream already
// records it (an unchanged declaration pushed again) has nothing to
// record: it is finished here, without a worker (once the declarations
// are on the bus, the agents' applies compete for the CPU, and a worker
// a node waits its turn among them).
func (p *push) finish(ctx context.Context, sent map[int]error) {
	var idx []int
	for _, i := range p.sendable() {
		err, ok := sent[i]
		switch {
		case !ok:
		case err == nil && p.staged[i].Recorded():
			d := p.staged[i].Declaration()
			p.outcomes[i].res.Declaration, p.outcomes[i].res.Digest = d.ID, d.Digest
		default:
			idx = append(idx, i)
		}
	}
	p.each(idx, func(i int) {
		d, err := p.c.handler.FinishPush(ctx, p.staged[i], sent[i])
		p.outcomes[i].res.Declaration, p.outcomes[i].res.Digest, p.outcomes[i].err = d.ID, d.Digest, err
	})
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
