package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"meshplane/declaration"
	"meshplane/internal/safego"
)

// DefaultInterval is how often a running agent applies its latest
// declaration again when no new one came: the drift check (a container
// removed by hand is recreated within it).
const DefaultInterval = time.Minute

// Retry bounds of kept reports while the mesh does not take them, and how
// long one delivery attempt may take.
const (
	DefaultRetryMin      = 500 * time.Millisecond
	DefaultRetryMax      = 10 * time.Second
	DefaultReportTimeout = 5 * time.Second
)

// changeSettle is how long a running agent waits after the runtime says
// something changed before it makes its pass: one stop is several events
// (die, then stop), and the engine's state settles after the first.
const changeSettle = 300 * time.Millisecond

// ErrSourceEnded means the declaration source closed while Run was running
// (the connection to the bus was closed under it).
var ErrSourceEnded = errors.New("agent: the declaration source ended")

// Source is where a running agent's declarations come from: on the bus, its
// node's key. It is what Run needs of a transport to receive.
type Source interface {
	// Declarations yields the node's latest declaration at once, if it has
	// one (an agent that was away gets it on return), then each new one,
	// keeping only the newest while the agent is busy applying. A
	// declaration put again (an operator's push of the same one) is yielded
	// again. The channel is closed when ctx ends or the source ends for good.
	Declarations(ctx context.Context) (<-chan declaration.Declaration, error)
}

// Reporter hands a report to the mesh. It is what Run needs of a transport
// to send.
type Reporter interface {
	// Report publishes r with its apply id (r.Outcome.ApplyID) as the
	// message id and returns once the mesh accepted it: nil means it is
	// stored and will be recorded (duplicate says the mesh had it already:
	// an earlier send whose acknowledgement was lost); an error means it may
	// not be, and the agent keeps it and sends it again. It must not buffer a
	// report while the mesh is away and send it later on its own: a late
	// report is sent by the agent, with its attempts, so it is recorded as
	// late (rule 8).
	Report(ctx context.Context, r Report) (duplicate bool, err error)
}

// DryRunServer hands the mesh's dry-run requests (mesh plan) to answer,
// the running agent's DryRun, until stop is called. It is what Run needs of
// a transport to be asked; on the bus, the node's plan subject.
type DryRunServer interface {
	ServeDryRuns(ctx context.Context, answer func(context.Context, declaration.Declaration) (Preview, error)) (stop func(), err error)
}

// RunConfig is what Run runs with. Node, Runtime, Outbox, Source and
// Reporter are required.
type RunConfig struct {
	Node    string  // the node this agent applies for
	Runtime Runtime // carries out the plan
	// Outbox keeps reports until the mesh took them, and the State: a
	// directory (OpenOutbox) so a restarted agent delivers what it kept.
	Outbox   *Outbox
	Source   Source
	Reporter Reporter
	// Rosters, if set, is where the mesh's roster comes from (on the bus,
	// the shared roster value): a declaration that names its roster
	// revision is filled from it before its Diff. Unset, it is the Source
	// if that is a RosterSource too (the bus's AgentLink); without either,
	// such a declaration is reported not applied after RosterWait.
	Rosters RosterSource
	// RosterWait bounds the wait for the roster revision a declaration
	// names: past it the declaration is reported as not applied, with the
	// reason, and applied once the roster comes. 0 means DefaultRosterWait.
	RosterWait time.Duration
	// DryRuns, if set, is where the agent answers dry runs (mesh plan):
	// the same observation and Diff as an apply, nothing applied.
	DryRuns DryRunServer
	// Secrets, if set, gives the values of the secrets the containers it
	// creates read (secret.go): on the bus, the node's own connection.
	Secrets SecretSource

	// FollowContainers and MinHealthy are the Agent's (Config): each pass
	// reports what changed in how the declared containers run.
	FollowContainers bool
	MinHealthy       time.Duration

	// Interval is the drift check: the latest declaration is applied again
	// this long after the last apply. 0 means DefaultInterval.
	Interval time.Duration
	// RetryMin and RetryMax bound the wait before kept reports are sent
	// again: from RetryMin, doubling after each failed round, to RetryMax.
	// 0 means DefaultRetryMin and DefaultRetryMax.
	RetryMin, RetryMax time.Duration
	// ReportTimeout bounds one delivery attempt. 0 means DefaultReportTimeout.
	ReportTimeout time.Duration

	Now    func() time.Time          // nil: time.Now
	NewID  func() (uuid.UUID, error) // apply ids; nil: uuid.NewV7
	Logger *slog.Logger              // nil: slog.Default()
	// Applied, if set, is called after each apply with its report (Kept
	// says it waits in the outbox). Tests and metrics use it.
	Applied func(Report)
}

// Run is the agent process's loop. It delivers the reports a previous run
// kept, then applies each declaration the Source yields, and the latest one
// again every Interval (drift); each apply's report is kept in the outbox and
// delivered in apply order through the Reporter. A report the mesh did not
// take stays kept and is sent again after a backoff, with its attempts and
// last error, until it is taken, so the controller records it once, as
// delivered late (docs/design.md rule 8).
//
// A declaration that cannot be applied (invalid, for another node, a node
// that cannot be observed) is logged and skipped; the loop goes on. So is
// an apply, or a round of kept reports, that panics: logged with its stack
// and counted (package safego, where agent.apply and agent.flush), the
// kept reports sent again after the backoff.
//
// A Runtime that is a Watcher (the Docker runtime) has the latest
// declaration applied again at once when it says something changed behind
// the agent's back (a container stopped, died, was removed).
//
// Run returns nil when ctx ends, and an error if it cannot start (a bad
// configuration, an outbox that does not load, a source that cannot be
// watched) or the Source ends (ErrSourceEnded).
func Run(ctx context.Context, cfg RunConfig) error {
	switch {
	case cfg.Source == nil:
		return fmt.Errorf("agent: run %s: no declaration source", cfg.Node)
	case cfg.Reporter == nil:
		return fmt.Errorf("agent: run %s: no reporter", cfg.Node)
	}
	r := &runner{cfg: cfg}
	r.defaults()
	a, err := New(Config{
		Node: cfg.Node, Runtime: cfg.Runtime, Outbox: cfg.Outbox,
		Deliver: r.deliver, Now: r.cfg.Now, NewID: r.cfg.NewID, Secrets: cfg.Secrets,
		FollowContainers: cfg.FollowContainers, MinHealthy: cfg.MinHealthy,
	})
	if err != nil {
		return fmt.Errorf("agent: run: %w", err)
	}
	r.agent = a
	if cfg.DryRuns != nil {
		stop, err := cfg.DryRuns.ServeDryRuns(ctx, func(ctx context.Context, d declaration.Declaration) (Preview, error) {
			fd, err := r.held.fill(d)
			if err != nil {
				return Preview{}, fmt.Errorf("agent: dry run %s: %w", d.ID, err)
			}
			return a.DryRun(ctx, fd)
		})
		if err != nil {
			return fmt.Errorf("agent: run %s: answer dry runs: %w", cfg.Node, err)
		}
		defer stop()
		// The same transport answers container logs (logs.go), when it can.
		stopLogs, err := serveLogs(ctx, cfg)
		if err != nil {
			return fmt.Errorf("agent: run %s: answer log requests: %w", cfg.Node, err)
		}
		defer stopLogs()
	}
	decls, err := cfg.Source.Declarations(ctx)
	if err != nil {
		return fmt.Errorf("agent: run %s: watch declarations: %w", cfg.Node, err)
	}
	if cfg.Rosters == nil {
		cfg.Rosters, _ = cfg.Source.(RosterSource) // a bus link is both
	}
	if cfg.Rosters != nil {
		if r.rosters, err = cfg.Rosters.Rosters(ctx); err != nil {
			return fmt.Errorf("agent: run %s: watch the roster: %w", cfg.Node, err)
		}
	}
	if w, ok := cfg.Runtime.(Watcher); ok {
		if r.changes, err = w.Changes(ctx); err != nil {
			return fmt.Errorf("agent: run %s: watch the runtime: %w", cfg.Node, err)
		}
	}
	return r.loop(ctx, decls)
}

// runner is Run's state, owned by its one goroutine.
type runner struct {
	cfg   RunConfig
	agent *Agent
	log   *slog.Logger

	latest  *declaration.Declaration // as it came: filled from held before each apply
	changes <-chan string            // the runtime's changes behind the agent's back (Watcher); nil without

	rosters <-chan declaration.Roster // RunConfig.Rosters; nil without
	held    rosters                   // the rosters it holds
	// pending says latest names a roster revision not held: it waits for
	// it (wait runs) until RosterWait, then is reported not applied
	// (waitOver) at each try until the roster comes.
	pending  bool
	wait     *time.Timer
	waitOver bool

	backoff time.Duration // the next wait before kept reports are sent again
	retry   *time.Timer   // set while reports are kept
}

func (r *runner) defaults() {
	c := &r.cfg
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.RetryMin <= 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	if c.ReportTimeout <= 0 {
		c.ReportTimeout = DefaultReportTimeout
	}
	if c.RosterWait <= 0 {
		c.RosterWait = DefaultRosterWait
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = uuid.NewV7
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	r.log = log.With("node", c.Node)
	r.backoff = c.RetryMin
}

func (r *runner) loop(ctx context.Context, decls <-chan declaration.Declaration) error {
	drift := time.NewTimer(r.cfg.Interval)
	defer drift.Stop()
	defer func() {
		if r.retry != nil {
			r.retry.Stop()
		}
		r.stopWait()
	}()
	r.safely(ctx, "agent.flush", func() { r.flush(ctx) }) // what a previous run kept
	var settled <-chan time.Time                          // a runtime change waits for its burst to settle
	var why string
	for {
		var retry, wait <-chan time.Time
		if r.retry != nil {
			retry = r.retry.C
		}
		if r.wait != nil {
			wait = r.wait.C
		}
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-decls:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("agent: run %s: %w", r.cfg.Node, ErrSourceEnded)
			}
			r.latest = &d
			r.stopWait()
			r.waitOver = false
			r.applyLatest(ctx, "declaration")
			drift.Reset(r.cfg.Interval)
		case ro, ok := <-r.rosters:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("agent: run %s: the roster source: %w", r.cfg.Node, ErrSourceEnded)
			}
			r.held.add(ro)
			if r.pending && r.latest != nil {
				r.applyLatest(ctx, fmt.Sprintf("roster revision %d", ro.Revision))
				drift.Reset(r.cfg.Interval)
			}
		case <-wait:
			r.wait, r.waitOver = nil, true
			if r.pending && r.latest != nil {
				r.applyLatest(ctx, "roster wait")
			}
		case <-drift.C:
			if r.latest != nil {
				r.applyLatest(ctx, "drift check")
			}
			drift.Reset(r.cfg.Interval)
		case <-retry:
			r.retry = nil
			r.safely(ctx, "agent.flush", func() { r.flush(ctx) })
		case what, ok := <-r.changes:
			if !ok {
				r.changes = nil // the watch ended with ctx
				continue
			}
			if settled == nil {
				settled = time.After(changeSettle)
				why = "runtime: " + what
			}
		case <-settled:
			settled = nil
			if r.latest != nil {
				r.applyLatest(ctx, why)
				drift.Reset(r.cfg.Interval)
			}
		}
	}
}

// safely runs one apply or one round of kept reports (fn) as a handler: a
// panic in it (the runtime, the outbox, a callback) is logged with the
// stack and counted (safego), and the loop goes on. Whatever the outbox
// holds is sent again after the backoff, so a report kept before the panic
// is delivered; the declaration is applied again at the next drift check,
// or when a new one comes.
func (r *runner) safely(ctx context.Context, where string, fn func()) {
	if err := safego.Call(where, r.log, func() error { fn(); return nil }); err != nil {
		r.settle(ctx, true)
	}
}

// applyLatest applies the latest declaration, filled from the roster it
// names. One whose roster is not held waits for it (pending) up to
// RosterWait; past it, each try reports it not applied with the reason:
// never a hosts file from no roster, nor a stale one.
func (r *runner) applyLatest(ctx context.Context, why string) {
	d := *r.latest
	fd, err := r.held.fill(d)
	if err == nil {
		r.pending = false
		r.stopWait()
		r.safely(ctx, "agent.apply", func() { r.apply(ctx, fd, why) })
		return
	}
	r.pending = true
	if !r.waitOver {
		if r.wait == nil {
			r.log.Info("agent: waiting for the roster the declaration names", "declaration", d.ID, "roster_revision", d.RosterRevision, "for", r.cfg.RosterWait, "why", why)
			r.wait = time.NewTimer(r.cfg.RosterWait)
		}
		return
	}
	r.safely(ctx, "agent.apply", func() { r.notApplied(ctx, d, err, why) })
}

func (r *runner) stopWait() {
	if r.wait != nil {
		r.wait.Stop()
		r.wait = nil
	}
}

// notApplied reports d not applied for cause, and settles its delivery.
func (r *runner) notApplied(ctx context.Context, d declaration.Declaration, cause error, why string) {
	rep, err := r.agent.NotApplied(ctx, d, fmt.Errorf("waited %s: %w", r.cfg.RosterWait, cause))
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("agent: not applied, and the report failed", "declaration", d.ID, "why", why, "err", err)
		}
		if rep.Outcome.ApplyID == "" {
			return
		}
		rep.Kept = true
	} else {
		r.log.Warn("agent: not applied", "declaration", d.ID, "why", why, "apply", rep.Outcome.ApplyID, "reason", cause)
	}
	if r.cfg.Applied != nil {
		r.cfg.Applied(rep)
	}
	r.settle(ctx, rep.Kept)
}

// apply applies d and settles what its delivery left kept.
func (r *runner) apply(ctx context.Context, d declaration.Declaration, why string) {
	rep, err := r.agent.Apply(ctx, d)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("agent: apply failed", "declaration", d.ID, "why", why, "err", err)
		}
		if rep.Outcome.ApplyID == "" {
			return // nothing applied
		}
		// Applied, but the outbox failed: try its reports again later.
		rep.Kept = true
	} else {
		r.log.Info("agent: applied", "declaration", d.ID, "why", why, "apply", rep.Outcome.ApplyID, "summary", rep.Summary(), "kept", rep.Kept)
	}
	if r.cfg.Applied != nil {
		r.cfg.Applied(rep)
	}
	r.settle(ctx, rep.Kept)
}

// flush sends the kept reports again.
func (r *runner) flush(ctx context.Context) {
	n, err := r.agent.Flush(ctx)
	if n > 0 {
		r.log.Info("agent: kept reports delivered", "count", n)
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrUndelivered) {
		r.log.Error("agent: outbox", "err", err)
	}
	r.settle(ctx, err != nil)
}

// settle schedules the next round for kept reports, backing off, or resets
// the backoff once nothing is kept.
func (r *runner) settle(ctx context.Context, kept bool) {
	if ctx.Err() != nil {
		return
	}
	if !kept {
		r.backoff = r.cfg.RetryMin
		if r.retry != nil {
			r.retry.Stop()
			r.retry = nil
		}
		return
	}
	if r.retry != nil {
		return // a round is already due
	}
	r.log.Warn("agent: reports kept; sending them again later", "in", r.backoff)
	r.retry = time.NewTimer(r.backoff)
	r.backoff = min(r.backoff*2, r.cfg.RetryMax)
}

// deliver is the Agent's Deliver: one attempt through the Reporter, bounded.
func (r *runner) deliver(ctx context.Context, rep Report) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReportTimeout)
	defer cancel()
	dup, err := r.cfg.Reporter.Report(ctx, rep)
	if err != nil {
		return err
	}
	if rep.Attempts > 0 {
		r.log.Info("agent: report delivered late", "apply", rep.Outcome.ApplyID, "attempts", rep.Attempts, "last_error", rep.LastError)
	}
	if dup {
		r.log.Info("agent: report was delivered before", "apply", rep.Outcome.ApplyID)
	}
	return nil
}
