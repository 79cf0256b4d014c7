package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/internal/safego"
	"meshplane/projections"
	"meshplane/secrets"
)

// DefaultInterval is how often the controller composes every node and
// pushes what changed.
const DefaultInterval = 5 * time.Minute

// Publisher hands a node's declaration to the bus (the latest per node is
// what an agent applies). The NATS bus implements it; tests use a fake.
type Publisher interface {
	PutDeclaration(ctx context.Context, d declaration.Declaration) error
}

// BatchPublisher is a Publisher that also puts many declarations at once,
// pipelined (the NATS bus publishes them all, then awaits the
// acknowledgements): a push of many nodes hands them over in one call.
// It returns each put's error in the order of ds, or nil when all were put.
type BatchPublisher interface {
	Publisher
	PutDeclarations(ctx context.Context, ds []declaration.Declaration) []error
}

// Config is what a controller runs with. Store is required.
type Config struct {
	Store    events.Store
	Registry *events.Registry // nil: events.NewRegistry()

	// Publisher is where pushes go. Nil means there is no bus (a CLI on its
	// own store): commands push nothing, and Push fails.
	Publisher Publisher

	Clock    func() time.Time // stamps events; nil: time.Now
	Interval time.Duration    // between pushes of what changed; 0: DefaultInterval
	// DeferDefines (mesh up --push-on-define=false) makes a module
	// definition wait for an explicit push (Push, PushChanged: mesh push):
	// defining pushes nothing, and the interval pass pushes nothing (nor
	// retries a failed push) until the next explicit push, from the start
	// too (a definition made before a restart still waits). Other commands
	// push the nodes they touch as ever, the held definition with them.
	// False (the default): a definition pushes the nodes it changes at once.
	DeferDefines bool
	// Ticks, when set, replaces the interval's ticker (tests drive it).
	Ticks <-chan time.Time
	// Passed, when set, is called after each pass of Run (the first, and
	// one per tick): a test that drives Ticks knows when its pass is over.
	Passed func()

	// SilentAfter is how long a node may go unheard before it is
	// unreachable (liveness.go): the bus's heartbeat subscription calls
	// Heard. 0: no liveness (a CLI on its own store, a run without
	// agents): status shows no last seen and nothing is recorded.
	SilentAfter time.Duration
	// LivenessTicks, when set, replaces the liveness check's ticker
	// (tests drive it, or call CheckLiveness themselves).
	LivenessTicks <-chan time.Time

	// SecretKey seals and opens secrets (mesh secret set, the agents'
	// requests); nil: this controller sets and gives none.
	SecretKey *secrets.Key

	Version string       // reported by Info
	Logger  *slog.Logger // nil: slog.Default()

	// Standby starts the controller as a standby: its projections are kept
	// live from the store and it answers reads, but it composes, pushes and
	// records nothing, and refuses writes (api.CodeStandby), until Lead.
	// Another controller on the same store leads meanwhile.
	Standby bool

	// Preloaded projections (local.go): Views and Runner, both or neither,
	// the runner feeding those views from Store and set at the position
	// they were loaded at (a CLI resuming from a snapshot on disk). Queries
	// catch them up from there. Nil: empty projections, folded from 0.
	Views  *projections.Set
	Runner *projections.Runner
	// ComposeReader, when set, is what each node's compose in a push reads
	// through: it is given the node and the pass's reader (a
	// commands.MeshCache's) and returns the reader to use. The simulator sets
	// it to inject seed 000's swallowed read (sim.Mesh.SetLossy); nil reads
	// the cache as it is.
	ComposeReader func(node string, r commands.Reader) commands.Reader

	// TimelineQuery, when set, answers the timeline's queries instead of
	// Views.Timeline.Query: the entries before some position are on disk
	// (snapstore.Local.Timeline). Why then refuses, since it needs every
	// entry in memory.
	TimelineQuery func(projections.Filter) ([]projections.Entry, error)

	// Checkpoints keeps the projections' checkpoints, from which At folds
	// a past moment (at.go) and Resume restores the live projections at a
	// start (resume.go). Nil: in memory (DefaultCheckpoints). The daemon
	// keeps them on disk, in its data directory. The controller's own
	// runner keeps them as it folds, with its token table, unless
	// preloaded (the loader's runner does: snapstore.Options.Keeper).
	Checkpoints *projections.Keeper
}

// Controller is the daemon's core: the store, the write side over it, the
// projections kept live from it, and the pushes to the bus. It implements
// api.Service (the local implementation every CLI verb runs on).
//
// Invariants:
//   - commands are serialized (cmdMu), so a batch checked as a whole before
//     its first append is appended as a whole (all-or-nothing, unless the
//     store fails midway);
//   - pushes are serialized (pushMu); pushed[n] is the digest of the last
//     declaration handed to the bus for n, and a declaration with that
//     digest is not handed again except by Push (push now);
//   - a command returns only once the projections have folded what it
//     appended, and every query first waits for them to reach the store's
//     head as it was when the query began (read-your-writes).
type Controller struct {
	store    events.Store
	reg      *events.Registry
	handler  *commands.Handler
	views    *projections.Set
	runner   *projections.Runner
	pub      Publisher
	clock    func() time.Time
	interval time.Duration
	ticks    <-chan time.Time
	passed   func()
	version  string
	log      *slog.Logger

	live      *liveness        // nil without Config.SilentAfter
	liveTicks <-chan time.Time // Config.LivenessTicks

	running atomic.Bool
	started atomic.Pointer[time.Time]

	standby atomic.Bool // see Config.Standby
	// deferring: a definition waits for an explicit push (Config.DeferDefines).
	deferDefines bool
	deferring    atomic.Bool
	lead         chan struct{} // Lead's wake-up of Run (buffered 1)

	cmdMu sync.Mutex

	pushMu  sync.Mutex
	pushed  map[string]string                                    // node → digest last handed to the bus
	readers func(node string, r commands.Reader) commands.Reader // Config.ComposeReader

	access accessState // access.go: joining and revoking

	secretKey *secrets.Key // secret.go; Config.SecretKey

	tokens  *projections.Tokens      // token.go: fed by runner beside views; nil when preloaded
	revoked *projections.Revocations // access.go: so too

	preloaded bool                                                  // see Config.Views
	tlQuery   func(projections.Filter) ([]projections.Entry, error) // see Config.TimelineQuery

	keeper *projections.Keeper // Config.Checkpoints
	ats    atCache             // at.go: the moments folded last
	resume *resumed            // resume.go: set by Resume, nil otherwise
}

var _ api.Service = (*Controller)(nil)

// New returns a controller over cfg.Store. Its projections are empty until
// Run (or the first query) folds the store.
func New(cfg Config) (*Controller, error) {
	if cfg.Store == nil {
		return nil, errors.New("controller: no store")
	}
	c := &Controller{
		store: cfg.Store, reg: cfg.Registry, pub: cfg.Publisher, clock: cfg.Clock,
		interval: cfg.Interval, ticks: cfg.Ticks, passed: cfg.Passed, version: cfg.Version, log: cfg.Logger,
		pushed: map[string]string{}, lead: make(chan struct{}, 1), readers: cfg.ComposeReader,
		live: newLiveness(cfg.SilentAfter), liveTicks: cfg.LivenessTicks, secretKey: cfg.SecretKey,
	}
	c.standby.Store(cfg.Standby)
	c.deferDefines = cfg.DeferDefines
	c.deferring.Store(cfg.DeferDefines)
	if c.reg == nil {
		c.reg = events.NewRegistry()
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	if c.interval <= 0 {
		c.interval = DefaultInterval
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.version == "" {
		c.version = "dev"
	}
	c.handler = commands.NewHandler(c.store, c.reg, commands.WithClock(c.clock), commands.WithReportFacts(reportFacts{c}))
	if err := c.preload(cfg); err != nil {
		return nil, err
	}
	if c.views == nil {
		c.views = projections.New()
		// The token table and the revocation list are folded with the Set
		// but are not part of it (no snapshot, no rebuild comparison).
		c.tokens, c.revoked = projections.NewTokens(), projections.NewRevocations()
		c.runner = projections.NewRunner(c.store, c.reg, append(c.views.All(), c.tokens, c.revoked)...)
	}
	c.keeper = cfg.Checkpoints
	if c.keeper == nil {
		c.keeper = projections.NewKeeper(projections.NewMemCheckpointStore(), DefaultCheckpoints, func(n string) {
			c.log.Warn("controller: checkpoints: " + n)
		})
	}
	if !c.preloaded {
		c.runner.KeepWith(c.keeper, c.views, checkpointExtraOf(c.tokens, c.revoked))
	}
	c.runner.OnPanic(c.reportPanic)
	return c, nil
}

// reportPanic logs and counts a projection's panic (safego.Report): the
// event is one of the runner's failures, and the controller carries on.
func (c *Controller) reportPanic(err error) { safego.Report(c.log, err) }

// Views are the controller's projections (read them after Sync).
func (c *Controller) Views() *projections.Set { return c.views }

// Runner is what feeds the projections (for rebuild and its counters).
func (c *Controller) Runner() *projections.Runner { return c.runner }

// Handler is the write side.
func (c *Controller) Handler() *commands.Handler { return c.handler }

// Run keeps the projections live, pushes what changed on every node once
// at start and then every interval, until ctx ends; then it stops the
// projections and returns nil. It fails if the projections fail (the store
// cannot be read) or if it is already running.
func (c *Controller) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("controller: already running")
	}
	defer c.running.Store(false)
	now := c.clock()
	c.started.Store(&now)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	folded := make(chan error, 1)
	// The projections are a loop the controller cannot run without: a
	// panic there ends Run with it (and the process, which exits 70).
	go func() {
		folded <- safego.Call("controller.projections", c.log, func() error { return c.runner.Run(ctx) })
	}()

	ticks := c.ticks
	if ticks == nil {
		t := time.NewTicker(c.interval)
		defer t.Stop()
		ticks = t.C
	}
	var liveTicks <-chan time.Time
	var liveKick <-chan struct{}
	if c.live != nil {
		c.live.startTracking(now, !c.standby.Load())
		liveTicks, liveKick = c.liveTicks, c.live.kick
		if liveTicks == nil {
			t := time.NewTicker(c.live.every())
			defer t.Stop()
			liveTicks = t.C
		}
	}
	c.pass(ctx)
	for {
		select {
		case <-ctx.Done():
			cancel()
			if err := <-folded; err != nil {
				return fmt.Errorf("controller: stop: %w", err)
			}
			return nil
		case err := <-folded:
			if err == nil && ctx.Err() != nil {
				return nil // stopped with ctx
			}
			if err == nil {
				err = errors.New("projections stopped")
			}
			return fmt.Errorf("controller: %w", err)
		case <-ticks:
			c.pass(ctx)
		case <-c.lead:
			c.pass(ctx)
		case <-liveTicks:
			c.checkLiveness(ctx)
		case <-liveKick:
			c.checkLiveness(ctx)
		}
	}
}

// Lead ends standby: from now on the controller composes, pushes and takes
// writes, and Run makes a pass at once. What the last leader pushed is in
// the projections (lastPushed), so only what changed since is pushed; and
// every push appends at its node's expected version, so a push the last
// leader made meanwhile refuses this one rather than doubling it.
func (c *Controller) Lead() {
	if c.standby.CompareAndSwap(true, false) {
		if c.live != nil {
			c.live.lead(c.clock())
		}
		select {
		case c.lead <- struct{}{}:
		default:
		}
	}
}

// Running reports whether Run is running.
func (c *Controller) Running() bool { return c.running.Load() }

// Standby reports whether the controller is a standby (see Config.Standby).
func (c *Controller) Standby() bool { return c.standby.Load() }

// errStandby is the rejection of a write on a standby.
func errStandby() error {
	return reject(api.CodeStandby, "this controller is a standby: another controller holds the store's leader lock and takes writes; send this to it (mesh info against each controller says which leads)")
}

// pass pushes every node's declaration that changed since its last push.
// A pass that panics is logged with its stack and counted
// (controller.pass); the next pass comes at the next tick.
func (c *Controller) pass(ctx context.Context) {
	if c.passed != nil {
		defer c.passed()
	}
	if c.pub == nil || c.standby.Load() || c.deferring.Load() {
		return
	}
	err := safego.Call("controller.pass", c.log, func() error {
		_, err := c.pushNodes(ctx, nil, false)
		return err
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, safego.ErrPanic) {
		c.log.Error("controller: interval pass", "error", err)
	}
}

// checkLiveness is CheckLiveness from Run: an error is logged, and the
// transitions it could not record are asked again at the next check.
func (c *Controller) checkLiveness(ctx context.Context) {
	err := safego.Call("controller.liveness", c.log, func() error {
		_, err := c.CheckLiveness(ctx)
		return err
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, safego.ErrPanic) {
		c.log.Error("controller: liveness check", "error", err)
	}
}

// Sync waits until the projections have folded the store's head as it is
// now: through the running runner, or by catching up itself when Run is not
// running (a CLI on its own store).
func (c *Controller) Sync(ctx context.Context) error {
	head, err := c.store.Head(ctx)
	if err != nil {
		return fmt.Errorf("controller: head: %w", err)
	}
	if err := c.syncTo(ctx, head); err != nil {
		return err
	}
	return c.checkPreloaded()
}

func (c *Controller) syncTo(ctx context.Context, pos uint64) error {
	if c.runner.Position() >= pos {
		return nil
	}
	if c.running.Load() {
		return c.runner.WaitFor(ctx, pos)
	}
	return c.runner.CatchUp(ctx)
}

// folded waits until the projections have folded evs, just appended (none:
// nothing to wait for).
func (c *Controller) folded(ctx context.Context, evs []events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	return c.syncTo(ctx, evs[len(evs)-1].Position)
}

// Info says what the controller is and how far its projections are.
func (c *Controller) Info(ctx context.Context) (api.Info, error) {
	head, err := c.store.Head(ctx)
	if err != nil {
		return api.Info{}, fmt.Errorf("controller: head: %w", err)
	}
	info := api.Info{
		Version: c.version, Role: api.RoleLocal, StoreHead: head,
		ProjectionPosition: c.runner.Position(), Nodes: len(c.views.Status.Nodes()),
		Publishing: c.pub != nil,
	}
	ch, err := c.store.ChainHead(ctx)
	if err != nil {
		return api.Info{}, fmt.Errorf("controller: chain head: %w", err)
	}
	info.Chain = ch.String()
	if c.running.Load() || c.standby.Load() {
		info.Role = api.RoleLeader
		if c.standby.Load() {
			info.Role = api.RoleStandby
		}
		info.Interval = c.interval.String()
		if s := c.started.Load(); s != nil {
			info.Started = *s
		}
	}
	return info, nil
}

// RecordReport records an agent's apply report (the bus consumer calls it)
// through the report door (commands.Handler.RecordApply), received at the
// controller's clock. Delivering the same report again appends nothing. A
// report the door refuses is recorded as report.refused on its node's
// stream (RecordRefusal) and returned as the *commands.Refusal
// (ErrRejected: never to be retried); one of a node that is not registered
// is a *commands.Rejection with CodeNodeUnknown, and nothing is appended.
// Any other error (the store) means "not now", the refusal's record
// included: the report is to be delivered again.
func (c *Controller) RecordReport(ctx context.Context, d commands.Delivery) ([]events.Event, error) {
	if c.standby.Load() {
		return nil, errStandby()
	}
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = c.clock()
	}
	evs, err := c.handler.RecordApply(ctx, d)
	var ref *commands.Refusal
	if errors.As(err, &ref) {
		if _, rerr := c.RecordRefusal(ctx, commands.RefusedReport{
			Node: d.Report.Node, Reason: ref.Reason, Detail: ref.Msg, Size: d.Size, Digest: d.Digest,
			ApplyID: d.ApplyID, Declaration: d.Report.Declaration, Correlation: d.Correlation,
		}); rerr != nil && !errors.Is(rerr, commands.ErrRejected) {
			return nil, fmt.Errorf("controller: report %s refused (%v), and recording the refusal failed: %w", d.ApplyID, err, rerr)
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if err := c.folded(ctx, evs); err != nil {
		return evs, err
	}
	c.RevertFailedRollouts(ctx, evs)
	return evs, nil
}

// RecordRefusal records a report message refused at the door (by the bus,
// which could not decode it, or by RecordReport) as report.refused on its
// node's stream, once per message (commands.Handler.RecordRefusal), and
// waits for the projections to fold it. A node that is not registered has
// nothing recorded: a *commands.Rejection with CodeNodeUnknown.
func (c *Controller) RecordRefusal(ctx context.Context, r commands.RefusedReport) ([]events.Event, error) {
	if c.standby.Load() {
		return nil, errStandby()
	}
	evs, err := c.handler.RecordRefusal(ctx, r)
	if err != nil {
		return nil, err
	}
	return evs, c.folded(ctx, evs)
}

// RecordThrottled records the summary of a node's reports deferred by its
// rate limit (report.throttled). A node that is not registered has nothing
// recorded: a *commands.Rejection with CodeNodeUnknown.
func (c *Controller) RecordThrottled(ctx context.Context, t commands.Throttled) ([]events.Event, error) {
	if c.standby.Load() {
		return nil, errStandby()
	}
	return c.handler.RecordThrottled(ctx, t)
}

// reportFacts answers the report door from the controller's projections:
// what a node's stream holds of the declaration a report names. What the
// projections do not know yet (a report that overtook the fold of its
// declaration's compose) is asked again once they have folded the store's
// head.
type reportFacts struct{ c *Controller }

func (f reportFacts) Declaration(ctx context.Context, node, id string) (commands.DeclarationFacts, error) {
	d := f.c.views.Status.Declaration(node, id)
	if !d.Composed || (!d.Pushed && !d.Latest) {
		if err := f.c.Sync(ctx); err != nil {
			return commands.DeclarationFacts{}, err
		}
		d = f.c.views.Status.Declaration(node, id)
	}
	return commands.DeclarationFacts{
		Composed: d.Composed, ComposedAt: d.ComposedAt, Pushed: d.Pushed, Latest: d.Latest,
		Resources: d.Resources, Counted: d.Composed && !d.ResourcesUnknown, Declared: d.Declared,
	}, nil
}
