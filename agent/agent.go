package agent

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
	"meshplane/events"
	"meshplane/wire"
)

// compactAgainst decides what the compact form of out may leave out, given
// what the agent reported last. It is pure.
func compactAgainst(last Last, out events.ApplyReported) (heldSince string, sameDeclaration bool) {
	if len(out.Held) > 0 && last.HeldIn != "" && slices.Equal(out.Held, last.Held) {
		heldSince = last.HeldIn
	}
	return heldSince, last.Declaration != "" && last.Declaration == out.Declaration
}

// lastAfter is l once r is reported. It is pure.
func lastAfter(l Last, r Report) Last {
	next := Last{Declaration: r.Outcome.Declaration}
	switch {
	case r.HeldSince != "":
		next.HeldIn, next.Held = l.HeldIn, l.Held
	case len(r.Outcome.Held) > 0:
		next.HeldIn, next.Held = r.Outcome.ApplyID, slices.Clone(r.Outcome.Held)
	}
	return next
}

// Config is what an Agent is made of. Every field is required.
type Config struct {
	Node    string                    // the node this agent applies for
	Runtime Runtime                   // carries out the plan
	Outbox  *Outbox                   // keeps reports until delivered, and the State
	Deliver Deliver                   // hands a report to the mesh
	Now     func() time.Time          // the clock
	NewID   func() (uuid.UUID, error) // apply ids: UUIDv7 (uuid.NewV7)
	// Secrets gives the values of the secrets the containers it creates
	// read (secret.go); nil: such a container fails, no value to give it.
	Secrets SecretSource
	// FollowContainers, with a Runtime that is an Inspector, has each
	// apply ask the engine how the declared containers run and report
	// what changed (Report.Workload, follow.go). Without it the agent
	// says nothing of them, and the mesh shows their state as unknown.
	FollowContainers bool
	// MinHealthy is the Follower's (0: events.MinHealthy).
	MinHealthy time.Duration
	// Sleep waits d on Now's clock while a start-first roll-out waits for
	// its new container (rollout.go); nil is a timer. A simulation that
	// moves its own clock moves it here.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Agent applies declarations to its node and reports the outcome. It is safe
// for concurrent use; applies are serialised.
type Agent struct {
	cfg Config

	mu     sync.Mutex
	state  State
	follow Follower
}

// New makes an agent, loading its State from the outbox (a restarted agent
// over the same outbox remembers the directories it made and its undelivered
// reports).
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.Node == "":
		return nil, errors.New("agent: new: empty node name")
	case cfg.Runtime == nil:
		return nil, fmt.Errorf("agent: new %s: no runtime", cfg.Node)
	case cfg.Outbox == nil:
		return nil, fmt.Errorf("agent: new %s: no outbox", cfg.Node)
	case cfg.Deliver == nil:
		return nil, fmt.Errorf("agent: new %s: no deliver", cfg.Node)
	case cfg.Now == nil:
		return nil, fmt.Errorf("agent: new %s: no clock", cfg.Node)
	case cfg.NewID == nil:
		return nil, fmt.Errorf("agent: new %s: no id source", cfg.Node)
	}
	st, err := cfg.Outbox.LoadState()
	if err != nil {
		return nil, fmt.Errorf("agent: new %s: %w", cfg.Node, err)
	}
	return &Agent{cfg: cfg, state: st, follow: Follower{MinHealthy: cfg.MinHealthy}}, nil
}

// Follow sets whether the agent follows how its containers run from its
// next apply on (Config.FollowContainers).
func (a *Agent) Follow(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg.FollowContainers = on
}

// State returns a copy of what the agent remembers.
// FollowDue is when the agent's next pass would see a container change
// state by itself (Follower.Due); zero when nothing waits on time.
func (a *Agent) FollowDue() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.follow.Due()
}

func (a *Agent) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state
	st.Made = slices.Clone(st.Made)
	st.Last.Held = slices.Clone(st.Last.Held)
	return st
}

// Apply makes the node hold d: it observes the node, plans (Diff), carries
// out every step through the Runtime, keeps the report in the outbox and
// then tries to deliver it (after any report kept earlier).
//
// A resource that fails is listed in the report's Failed with its error; the
// others are still applied. The error is non-nil when there was no apply
// (a declaration for another node or with duplicate names, a node that could
// not be observed: nothing was changed and no report made) or when the
// report or State could not be kept (the report returned is then the one the
// node applied, but it may be lost on restart). A failed delivery is not an
// error of Apply: the report stays kept, the returned report says so (Kept,
// and Attempts and LastError when its own delivery failed), and Flush tries
// again.
func (a *Agent) Apply(ctx context.Context, d declaration.Declaration) (Report, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(d); err != nil {
		return Report{}, err
	}
	if d.NamesRoster() {
		// Never a hosts file written from no roster, nor one stale.
		return a.notApplied(ctx, d, fmt.Errorf("declaration %s names roster revision %d, which it does not carry: %w", d.ID, d.RosterRevision, declaration.ErrRosterNotHeld))
	}
	var (
		plan Plan
		res  result
	)
	obs, err := Observe(ctx, a.cfg.Runtime, d)
	switch {
	case err != nil && ctx.Err() != nil:
		return Report{}, fmt.Errorf("agent: apply %s: %w", d.ID, err)
	case err != nil:
		// The engine could not be asked: nothing was done, and the report
		// says so resource by resource (never a silent success, never an
		// apply the mesh does not hear of).
		plan, res = unobserved(d, err)
	default:
		plan = Diff(d, obs, a.state)
		values, failed := a.secretsFor(ctx, plan)
		res = execute(ctx, a.cfg.Runtime, clock{now: a.cfg.Now, sleep: a.cfg.Sleep, failed: a.state.Failed}, plan, values)
		for name, err := range failed {
			res.failed[name] = err
		}
	}
	w := a.workload(ctx, d)
	if len(res.rollouts) > 0 {
		if w == nil {
			w = &wire.Workload{}
		}
		for _, r := range d.Resources {
			if f, ok := res.rollouts[r.Name]; ok {
				w.Rollouts = append(w.Rollouts, events.RolloutFailure{Module: r.Module, Container: r.Name, Why: events.BoundText(f.Why, events.MaxReportMessage)})
			}
		}
	}
	rep, err := a.keepWith(ctx, d, plan, res, w)
	return rep, err
}

// workload asks the engine how d's containers run and returns what changed
// since the last pass (nil for nothing, or when the agent does not follow
// them). A container the engine cannot be asked about is left as it was
// for this pass: never a state guessed.
func (a *Agent) workload(ctx context.Context, d declaration.Declaration) *wire.Workload {
	in, ok := a.cfg.Runtime.(Inspector)
	if !ok || !a.cfg.FollowContainers {
		return nil
	}
	declared := map[string]string{}
	states := map[string]ContainerState{}
	for _, r := range d.Resources {
		if r.Kind != declaration.KindContainer {
			continue
		}
		st, err := in.InspectContainer(ctx, r.Name)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			continue // not asked: not followed this pass
		default:
			states[r.Name] = st
		}
		declared[r.Name] = r.Module
	}
	var w *wire.Workload
	for _, t := range a.follow.Step(a.cfg.Now(), declared, states) {
		c := t.ContainerChange
		c.Node, c.Declaration = a.cfg.Node, d.ID
		if t.NeedLog {
			if log, err := in.ContainerLogTail(ctx, c.Container, events.MaxContainerLog); err == nil {
				c.Log = log
			}
		}
		if w == nil {
			w = &wire.Workload{}
		}
		w.Changes = append(w.Changes, c)
	}
	return w
}

// NotApplied reports d as not applied, for cause, without looking at the
// node or changing anything on it: every declared resource and the hosts
// file fail with "not applied: <cause>", and the report is kept and
// delivered as an apply's. A running agent reports so a declaration whose
// roster revision it does not come to hold within RunConfig.RosterWait.
func (a *Agent) NotApplied(ctx context.Context, d declaration.Declaration, cause error) (Report, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(d); err != nil {
		return Report{}, err
	}
	return a.notApplied(ctx, d, cause)
}

func (a *Agent) notApplied(ctx context.Context, d declaration.Declaration, cause error) (Report, error) {
	p := Plan{Declaration: d.ID, Steps: make([]Step, 0, len(d.Resources))}
	res := result{failed: make(map[string]error, len(d.Resources)+1)}
	res.failed[declaration.HostsPath] = fmt.Errorf("not applied: %w", cause)
	for _, r := range d.Resources {
		p.Steps = append(p.Steps, Step{Name: r.Name, Kind: r.Kind, Module: r.Module, Action: Reject, Reason: "not applied", Resource: r})
		res.failed[r.Name] = fmt.Errorf("not applied: %w", cause)
	}
	return a.keep(ctx, d, p, res)
}

// keep makes the report of d's carried-out plan, keeps it with the next
// State and tries to deliver it (Apply's end).
func (a *Agent) keep(ctx context.Context, d declaration.Declaration, plan Plan, res result) (Report, error) {
	return a.keepWith(ctx, d, plan, res, nil)
}

// keepWith is keep, the report carrying w.
func (a *Agent) keepWith(ctx context.Context, d declaration.Declaration, plan Plan, res result, w *wire.Workload) (Report, error) {
	id, err := a.cfg.NewID()
	if err != nil {
		return Report{}, fmt.Errorf("agent: apply %s: apply id: %w", d.ID, err)
	}
	rep := Report{
		Outcome:     buildOutcome(a.cfg.Node, d, plan, res),
		AppliedAt:   a.cfg.Now().UTC(),
		Correlation: d.Correlation,
		Workload:    w,
	}
	rep.Outcome.ApplyID = id.String()
	rep.HeldSince, rep.SameDeclaration = compactAgainst(a.state.Last, rep.Outcome)

	last := lastAfter(a.state.Last, rep)
	failedBefore := a.state.Failed
	a.state = NextState(a.state, d, res.made)
	a.state.Last = last
	a.state.Failed = nextFailed(failedBefore, d, res.rollouts)
	// The report and the State in one record: one durable write.
	if err := a.cfg.Outbox.Keep(rep, a.state); err != nil {
		return rep, fmt.Errorf("agent: apply %s: %w", d.ID, err)
	}
	if _, err := a.cfg.Outbox.Flush(ctx, a.cfg.Deliver); err != nil && !errors.Is(err, ErrUndelivered) && ctx.Err() == nil {
		return rep, fmt.Errorf("agent: apply %s: %w", d.ID, err)
	}
	pending, err := a.cfg.Outbox.Pending()
	if err != nil {
		return rep, fmt.Errorf("agent: apply %s: %w", d.ID, err)
	}
	for _, p := range pending {
		if p.Outcome.ApplyID == rep.Outcome.ApplyID {
			rep.Attempts, rep.LastError, rep.Kept = p.Attempts, p.LastError, true
		}
	}
	return rep, nil
}

// Flush tries again to deliver every kept report, in apply order (see
// Outbox.Flush).
func (a *Agent) Flush(ctx context.Context) (int, error) {
	return a.cfg.Outbox.Flush(ctx, a.cfg.Deliver)
}

// Pending returns the reports kept in the outbox, in apply order.
func (a *Agent) Pending() ([]Report, error) { return a.cfg.Outbox.Pending() }

func (a *Agent) check(d declaration.Declaration) error {
	if d.Node != a.cfg.Node {
		return fmt.Errorf("agent: apply %s: declaration is for node %q, this is %q: %w", d.ID, d.Node, a.cfg.Node, ErrInvalid)
	}
	if d.ID == "" {
		return fmt.Errorf("agent: apply: declaration for %s has no id: %w", d.Node, ErrInvalid)
	}
	seen := make(map[string]bool, len(d.Resources))
	for i, r := range d.Resources {
		if r.Name == "" {
			return fmt.Errorf("agent: apply %s: resources[%d]: empty name: %w", d.ID, i, ErrInvalid)
		}
		if seen[r.Name] {
			return fmt.Errorf("agent: apply %s: resources[%d]: name %q declared twice: %w", d.ID, i, r.Name, ErrInvalid)
		}
		seen[r.Name] = true
	}
	return nil
}

// Observe reads what Diff needs from the runtime: the managed containers,
// and what is at every declared directory and file path and at the hosts
// file. Any failure to look is an error; nothing there is a result.
func Observe(ctx context.Context, rt Runtime, d declaration.Declaration) (Observed, error) {
	obs := Observed{Containers: map[string]Container{}, Paths: map[string]PathState{}}
	cs, err := rt.ListContainers(ctx)
	if err != nil {
		return Observed{}, fmt.Errorf("observe: list containers: %w", err)
	}
	for _, c := range cs {
		obs.Containers[c.Name] = c
	}
	paths := []string{declaration.HostsPath}
	for _, r := range d.Resources {
		switch {
		case r.Kind == declaration.KindDirectory && r.Directory != nil:
			paths = append(paths, r.Directory.Path)
		case r.Kind == declaration.KindFile && r.File != nil:
			paths = append(paths, r.File.Path)
		}
	}
	for _, p := range paths {
		if _, done := obs.Paths[p]; done || ValidatePath(p) != nil {
			continue // a bad path is rejected by Diff, not looked at
		}
		info, err := rt.Stat(ctx, p)
		if err != nil {
			return Observed{}, fmt.Errorf("observe: stat %s: %w", p, err)
		}
		ps := PathState{PathInfo: info}
		if info.Exists && !info.Dir {
			if ps.Content, err = rt.ReadFile(ctx, p); err != nil {
				return Observed{}, fmt.Errorf("observe: read %s: %w", p, err)
			}
		}
		obs.Paths[p] = ps
	}
	return obs, nil
}

// result is what carrying out a plan did.
type result struct {
	failed   map[string]error // by resource (or removed container) name
	made     []string         // directory paths made
	rollouts map[string]FailedRollout
}

// unobserved is the plan and result of an apply whose node could not be
// observed: every declared resource failed with cause, and nothing done.
func unobserved(d declaration.Declaration, cause error) (Plan, result) {
	p := Plan{Declaration: d.ID, Steps: make([]Step, 0, len(d.Resources))}
	res := result{failed: make(map[string]error, len(d.Resources))}
	for _, r := range d.Resources {
		p.Steps = append(p.Steps, Step{Name: r.Name, Kind: r.Kind, Module: r.Module, Action: Reject, Reason: "not applied", Resource: r})
		res.failed[r.Name] = fmt.Errorf("not applied: the node could not be observed: %w", cause)
	}
	return p, res
}

// execute carries out plan through rt: the hosts file first (containers
// mount it), then directories and files, then (after pulling every image
// the creates and replaces need, on a runtime that pulls: images.go)
// removals, then containers, each after those it depends on (and, for
// service_healthy, once they are healthy: depends.go).
//
// values are the secrets' values of the containers it creates; a step whose
// secrets are missing from it is not carried out (secretsFor failed it).
func execute(ctx context.Context, rt Runtime, clk clock, plan Plan, values map[string]string) result {
	res := result{failed: map[string]error{}}
	if plan.Hosts.Write {
		if err := rt.WriteFile(ctx, declaration.HostsPath, []byte(plan.Hosts.Content), HostsMode); err != nil {
			res.failed[declaration.HostsPath] = fmt.Errorf("write hosts file: %w", err)
		}
	}
	phase := func(s Step) int {
		switch {
		case s.Kind == declaration.KindDirectory:
			return 0
		case s.Kind == declaration.KindFile:
			return 1
		case s.Action == Remove:
			return 2
		default:
			return 3
		}
	}
	order := make([]Step, 0, len(plan.Steps))
	for _, s := range plan.Steps {
		if s.Action != Unchanged && s.Action != Hold {
			order = append(order, s)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return phase(order[i]) < phase(order[j]) })
	order = orderByDependencies(order) // depends_on: a dependency first (depends.go)
	// Every image a create or replace needs is pulled before anything is
	// stopped (images.go); what a failed pull blocks is not carried out.
	blocked := pullFirst(ctx, rt, plan)
	for _, s := range order {
		if needsSecrets(s) && !hasSecrets(s, values) {
			continue
		}
		if err, ok := blocked[s.Name]; ok {
			res.failed[s.Name] = err
			continue
		}
		if err := awaitDependencies(ctx, rt, s, res.failed); err != nil {
			res.failed[s.Name] = err
			continue
		}
		if f, ok := clk.failed[s.Name]; ok && startFirst(rt, s) && f.Digest == s.Resource.Digest {
			res.failed[s.Name] = fmt.Errorf("replace %s start-first: not tried again: this build's roll-out failed (%s): %w", s.Name, f.Why, ErrUnhealthy)
			continue
		}
		err := do(ctx, rt, clk, s, values)
		if err != nil {
			res.failed[s.Name] = err
			var rf *rolloutFailure
			if errors.As(err, &rf) {
				if res.rollouts == nil {
					res.rollouts = map[string]FailedRollout{}
				}
				res.rollouts[s.Name] = FailedRollout{Digest: s.Resource.Digest, Why: rf.why}
			}
			continue
		}
		if s.Kind == declaration.KindDirectory && s.Action == Create {
			res.made = append(res.made, s.Resource.Directory.Path)
		}
	}
	return res
}

// do carries out one step. Its error names the step.
func do(ctx context.Context, rt Runtime, clk clock, s Step, values map[string]string) error {
	r := s.Resource
	switch s.Action {
	case Reject:
		return fmt.Errorf("%s %s: %s: %w", r.Kind, s.Name, s.Reason, ErrInvalid)
	case Remove:
		if err := rt.RemoveContainer(ctx, s.Name); err != nil {
			return fmt.Errorf("remove %s: %w", s.Name, err)
		}
		return nil
	}
	switch r.Kind {
	case declaration.KindContainer:
		c := Container{Name: r.Name, Module: r.Module, Digest: r.Digest, Spec: *r.Container, SecretEnv: secretEnv(r.Container, values)}
		if s.Action == Update { // stopped: start it
			if err := rt.StartContainer(ctx, r.Name); err != nil {
				return fmt.Errorf("start %s: %w", r.Name, err)
			}
			return nil
		}
		if startFirst(rt, s) {
			return replaceStartFirst(ctx, rt, clk, c)
		}
		if s.Action == Replace {
			if err := rt.RemoveContainer(ctx, r.Name); err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("replace %s: remove: %w", r.Name, err)
			}
			if err := rt.CreateContainer(ctx, c); err != nil {
				return fmt.Errorf("replace %s: create: %w", r.Name, err)
			}
			return nil
		}
		if err := rt.CreateContainer(ctx, c); err != nil {
			return fmt.Errorf("create %s: %w", r.Name, err)
		}
	case declaration.KindDirectory:
		mode := nodeplan.ModeOr(r.Directory.Mode, DefaultDirMode)
		if s.Action == Create {
			if err := rt.Mkdir(ctx, r.Directory.Path, mode); err != nil {
				return fmt.Errorf("make directory %s: %w", r.Directory.Path, err)
			}
			return nil
		}
		if err := rt.Chmod(ctx, r.Directory.Path, mode); err != nil {
			return fmt.Errorf("chmod %s %o: %w", r.Directory.Path, mode, err)
		}
	case declaration.KindFile:
		mode := nodeplan.ModeOr(r.File.Mode, DefaultFileMode)
		if err := rt.WriteFile(ctx, r.File.Path, []byte(r.File.Content), mode); err != nil {
			return fmt.Errorf("write %s: %w", r.File.Path, err)
		}
	}
	return nil
}

// buildOutcome turns a carried-out plan into the apply.reported payload
// (nodeplan.Outcome).
func buildOutcome(node string, d declaration.Declaration, plan Plan, res result) events.ApplyReported {
	return nodeplan.Outcome(node, d, plan, res.failed)
}

// NextState is the State after applying d: the directories made before that
// are still declared, and those made now. It is pure.
func NextState(st State, d declaration.Declaration, made []string) State {
	declared := map[string]bool{}
	for _, r := range d.Resources {
		if r.Kind == declaration.KindDirectory && r.Directory != nil {
			declared[path.Clean(r.Directory.Path)] = true
		}
	}
	var out []string
	for _, p := range st.Made {
		if declared[p] {
			out = append(out, p)
		}
	}
	out = append(out, made...)
	sort.Strings(out)
	return State{Made: compact(out)}
}
