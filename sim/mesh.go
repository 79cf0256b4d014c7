// Package sim is a whole meshplane in one process: the event store, the
// controller (its command handler, its projections, its push), and any
// number of simulated nodes, each an agent applying to an in-memory
// runtime, reached through a simulated bus. Faults are injected where the seeds say they happen: store
// reads that fail, a bus that is cut, and a world that removes containers.
//
// The scenario steps (features/), `mesh up` on simulated nodes, and the
// benchmarks all drive the mesh through sim, so they exercise the same
// commands, store, projections and agent code that a running mesh does;
// only the runtime and the bus are simulated.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/projections"
)

// ErrBusCut is the delivery failure of a cut bus.
var ErrBusCut = errors.New("bus cut")

// Actor is the operator the simulator acts as.
const Actor = "operator:sim"

// Mesh is an in-process mesh. Its methods are safe for concurrent use, but
// a scenario drives it one step at a time.
type Mesh struct {
	Store    *FaultyStore
	Registry *events.Registry
	Handler  *commands.Handler // the controller's
	Views    *projections.Set  // the controller's
	Runner   *projections.Runner
	// Controller is the controller over Store, publishing to the simulated
	// bus: PushChanged is its pass.
	Controller *controller.Controller
	// FollowContainers has the agents of the nodes made from then on
	// follow how their containers run (agent.Config.FollowContainers),
	// on the mesh's clock: each report carries what changed.
	FollowContainers bool

	now   func() time.Time // stamps every event the mesh makes
	clock *Clock           // the simulated clock behind now; nil for WithClock's
	mu    sync.Mutex
	nodes map[string]*Node
	lossy map[string]bool // nodes whose reads compose answers as "no modules" (SetLossy)
	// lossyPass is the compose reader of the controller pass under way
	// while nodes are lossy (lossyReaderFor); SetLossy clears it.
	lossyPass *lossyCache
	bus       busCounter // what the simulated bus carried (CountBus)
	// roster is the shared roster value of the simulated bus: put once a
	// revision (PutDeclaration), and every node that received a
	// declaration naming it holds this one value, never a copy.
	roster *declaration.Roster
}

// Node is a simulated node: its runtime, its agent, and its end of the bus.
type Node struct {
	Name    string
	Runtime *simruntime.Runtime
	Agent   *agent.Agent

	mu           sync.Mutex
	latest       *declaration.Declaration // the last declaration the bus delivered, as it travels (Wire)
	roster       *declaration.Roster      // the roster the node holds: the bus's shared value when latest was delivered
	cut          bool                     // the bus to this node is cut
	removesAfter bool                     // something outside removes every container after each apply
}

// Clock is the simulated clock: it starts at a fixed instant and advances a
// second each time it is read, so runs are reproducible.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock starting at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the current simulated time and advances it by a second.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(time.Second)
	return t
}

// Peek returns the current simulated time without advancing it.
func (c *Clock) Peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Epoch is when every simulation starts.
var Epoch = time.Date(2026, 9, 29, 22, 0, 0, 0, time.UTC)

// Option configures a Mesh.
type Option func(*options)

type options struct{ now func() time.Time }

// WithClock stamps the mesh's events (the handler's and every agent's) with
// now instead of a simulated clock starting at Epoch. `mesh up` passes the
// wall clock, since it writes to a user's store; scenarios, the simulator's
// workloads and the benchmarks keep the simulated clock, so their runs are
// reproducible.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// New returns a mesh over store (which it wraps for faults) with no nodes.
// Its clock is a simulated one starting at Epoch unless WithClock says
// otherwise.
func New(store events.Store, opts ...Option) *Mesh {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	var clock *Clock
	if o.now == nil {
		clock = NewClock(Epoch)
		o.now = clock.Now
	}
	m := &Mesh{Store: NewFaultyStore(store), Registry: events.NewRegistry(), now: o.now, clock: clock, nodes: map[string]*Node{}}
	c, err := controller.New(controller.Config{
		Store: m.Store, Registry: m.Registry, Publisher: m, Clock: o.now,
		Logger: slog.New(slog.DiscardHandler), ComposeReader: m.composeReader,
	})
	if err != nil {
		panic("sim: " + err.Error()) // a store is given: cannot happen
	}
	m.Controller, m.Handler, m.Views, m.Runner = c, c.Handler(), c.Views(), c.Runner()
	return m
}

// Do runs an operator command.
func (m *Mesh) Do(ctx context.Context, c commands.Command) error {
	_, err := m.Handler.Execute(ctx, Actor, c)
	return err
}

// AddNode registers node and starts its simulated agent.
func (m *Mesh) AddNode(ctx context.Context, name string) (*Node, error) {
	if err := m.Do(ctx, commands.RegisterNode{Node: name}); err != nil {
		return nil, err
	}
	return m.node(name)
}

// Node returns the simulated node name, starting its agent if need be (the
// node may have been registered by another process, or by a replayed
// stream).
func (m *Mesh) Node(name string) (*Node, error) { return m.node(name) }

func (m *Mesh) node(name string) (*Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.nodes[name]; ok {
		return n, nil
	}
	n := &Node{Name: name, Runtime: simruntime.New()}
	switch {
	case m.clock != nil:
		n.Runtime.SetClock(m.clock.Peek) // read without moving it
	case m.FollowContainers:
		n.Runtime.SetClock(m.now)
	}
	a, err := agent.New(agent.Config{
		Node:    name,
		Runtime: n.Runtime,
		Outbox:  agent.NewMemOutbox(),
		Secrets: simSecrets{},
		Deliver: func(ctx context.Context, r agent.Report) error { return m.deliver(ctx, n, r) },
		Now:     m.now,
		NewID:   uuid.NewV7,
		Sleep:   m.sleep,

		FollowContainers: m.FollowContainers,
	})
	if err != nil {
		return nil, fmt.Errorf("sim: start agent %s: %w", name, err)
	}
	n.Agent = a
	m.nodes[name] = n
	return n, nil
}

// simSecrets gives a simulated node's agent the secrets it asks for: a
// placeholder naming each secret's digest, never its value. A simulated
// runtime starts no process that could read one, and the simulator (mesh up
// --passes, scenarios, replay) holds no secret key to open them with.
type simSecrets struct{}

func (simSecrets) Secrets(_ context.Context, want []declaration.Secret) (map[string]string, error) {
	out := make(map[string]string, len(want))
	for _, w := range want {
		out[w.Secret] = "sim:" + w.Digest
	}
	return out, nil
}

// Nodes lists the simulated nodes, sorted.
func (m *Mesh) Nodes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.nodes))
}

// deliver is the bus from an agent back to the controller.
func (m *Mesh) deliver(ctx context.Context, n *Node, r agent.Report) error {
	n.mu.Lock()
	cut := n.cut
	n.mu.Unlock()
	if cut {
		return fmt.Errorf("sim: report from %s: connection closed: %w", n.Name, ErrBusCut)
	}
	id, err := uuid.Parse(r.Outcome.ApplyID)
	if err != nil {
		return fmt.Errorf("sim: report from %s: apply id %q: %w", n.Name, r.Outcome.ApplyID, err)
	}
	evs, err := m.Handler.RecordApply(ctx, commands.Delivery{
		Report: r.Wire(), ApplyID: id, AppliedAt: r.AppliedAt, Correlation: r.Correlation,
		Attempts: r.Attempts, LastError: r.LastError, Workload: r.Workload,
	})
	if err != nil {
		return err
	}
	// A failed roll-out of a module that says on_failure: revert is
	// reverted, as the controller does on a report it records.
	m.Controller.RevertFailedRollouts(ctx, evs)
	return nil
}

// Follow has node's agent follow how its containers run from now on
// (agent.Agent.Follow), its runtime on the mesh's clock (read without
// moving it): its reports carry what changed, as a real agent's do.
func (m *Mesh) Follow(node string) (*Node, error) {
	n, err := m.node(node)
	if err != nil {
		return nil, err
	}
	if m.clock != nil {
		n.Runtime.SetClock(m.clock.Peek)
	} else {
		n.Runtime.SetClock(m.now)
	}
	n.Agent.Follow(true)
	return n, nil
}

// sleep is an agent's wait (a start-first roll-out waiting for its new
// container): on the simulated clock it moves the clock on, never the
// wall clock's time; on another clock (WithClock) it is a timer.
func (m *Mesh) sleep(ctx context.Context, d time.Duration) error {
	if m.clock == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
	m.clock.Advance(d)
	return ctx.Err()
}

// Wait moves the mesh's simulated clock on by d (N minutes pass); a mesh
// on another clock (WithClock) cannot.
func (m *Mesh) Wait(d time.Duration) error {
	if m.clock == nil {
		return fmt.Errorf("sim: wait %s: the mesh runs on a clock it does not move", d)
	}
	m.clock.Advance(d)
	return nil
}

// Push pushes node now, changed or not, as mesh push does
// (commands.Handler.PushNode knowing no last push), over the simulated bus.
// It goes around the controller's memory of what it last pushed
// (PushChanged): a pass after it may send the same declaration again,
// which records nothing. A push begins a pass, for faults set on every
// other pass.
func (m *Mesh) Push(ctx context.Context, node string) error {
	m.Store.BeginPass()
	if _, err := m.node(node); err != nil {
		return err
	}
	_, _, err := m.Handler.PushNode(ctx, node, m.composeReader(node, m.Handler), commands.LastPush{}, m.PutDeclaration)
	return err
}

// PushChanged is the controller's pass (controller.Controller.PushChanged,
// the pass mesh up makes every interval): every registered node composed
// once, from one reading of the mesh, and pushed when its digest differs
// from the last pushed, or its compose failure recorded when it differs
// from the last recorded. A node's failure (a failed compose, a cut bus)
// is recorded on its stream, not returned; an error is the pass's own.
func (m *Mesh) PushChanged(ctx context.Context) error {
	_, err := m.Controller.PushChanged(ctx)
	return err
}

// PutDeclaration is the simulated bus to d's node (controller.Publisher),
// as the real bus carries it (bus.ControllerConn.PutDeclaration): the roster d
// names is put first as the one shared roster value, once a revision, then
// d travels without it (Wire). The latest declaration delivered is what
// the node applies next, filled from the roster it holds.
func (m *Mesh) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	n, err := m.node(d.Node)
	if err != nil {
		return err
	}
	shared := m.putRoster(d)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut {
		return fmt.Errorf("bus to %s: %w", d.Node, ErrBusCut)
	}
	w := d.Wire()
	n.latest = &w
	if shared != nil {
		n.roster = shared
	}
	m.countPut(w)
	return nil
}

// putRoster puts the roster d carries as the bus's shared value unless it
// is that value already, and returns the shared value (nil when d names no
// revision and carries its roster).
func (m *Mesh) putRoster(d declaration.Declaration) *declaration.Roster {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d.RosterRevision == 0 {
		return nil
	}
	if cur := m.roster; cur != nil && cur.Revision == d.RosterRevision && cur.Digest == d.RosterDigest {
		return cur
	}
	r, ok := d.RosterOf()
	if !ok {
		return m.roster
	}
	m.roster = &r
	m.countPut(r)
	return m.roster
}

// composeReader is what node's compose reads through: r, with the reads of
// lossy nodes answered as seed 000's swallowed error did (SetLossy).
func (m *Mesh) composeReader(node string, r commands.Reader) commands.Reader {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.lossy) == 0 {
		return r
	}
	// The controller gives its pass no context to the reader it asks for;
	// the lossy cache's first reads (Prepare) run under none.
	return m.lossyReaderFor(context.Background(), node, r)
}

// SetLossy makes every compose answer a read of the named nodes as "this
// node has no modules", as seed 000's gatherer did when it swallowed a
// failed read: their routed names leave every other node's roster. The
// node being composed is read as it is. No names clears it.
func (m *Mesh) SetLossy(nodes ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lossy, m.lossyPass = map[string]bool{}, nil
	for _, n := range nodes {
		m.lossy[n] = true
	}
}

// lossyReader is the handler's reader, with seed 000's bug: a read of a
// lossy node (other than the one composed) comes back with no modules.
type lossyReader struct {
	r      commands.Reader // the handler, or a MeshCache's reader (whose snapshot it does not pass on)
	target string
	lossy  map[string]bool // not changed while a compose reads it: SetLossy replaces it
}

var _ commands.Reader = (*lossyReader)(nil)

func (r *lossyReader) Nodes(ctx context.Context) ([]string, error) { return r.r.Nodes(ctx) }

func (r *lossyReader) Module(ctx context.Context, name string) (commands.Module, error) {
	return r.r.Module(ctx, name)
}

func (r *lossyReader) Node(ctx context.Context, name string) (commands.Node, error) {
	n, err := r.r.Node(ctx, name)
	if err != nil || name == r.target || !r.lossy[name] || len(n.Assigned) == 0 {
		return n, err
	}
	n.Assigned, n.Taken = nil, nil // the handler's maps are shared: replaced, never changed
	return n, nil
}

// Apply makes node apply the latest declaration the bus delivered to it.
// A node that has received none has nothing to apply: that is no error.
func (m *Mesh) Apply(ctx context.Context, node string) (agent.Report, bool, error) {
	n, err := m.node(node)
	if err != nil {
		return agent.Report{}, false, err
	}
	n.mu.Lock()
	d, held, removes := n.latest, n.roster, n.removesAfter
	n.mu.Unlock()
	if d == nil {
		return agent.Report{}, false, nil
	}
	filled := *d
	if d.NamesRoster() {
		var ro declaration.Roster
		if held != nil {
			ro = *held
		}
		var err error
		if filled, err = d.Fill(ro); err != nil {
			// Never applied from no roster or another: reported so (a
			// simulated agent waits no longer than the pass).
			r, err := n.Agent.NotApplied(ctx, *d, err)
			if err != nil {
				return r, false, fmt.Errorf("sim: %s applies %s: %w", node, d.ID, err)
			}
			return r, true, nil
		}
	}
	r, err := n.Agent.Apply(ctx, filled)
	if err != nil {
		return r, false, fmt.Errorf("sim: %s applies %s: %w", node, d.ID, err)
	}
	if removes {
		n.Runtime.RemoveAllContainers()
	}
	return r, true, nil
}

// Pass is one pass on node: push to it, then it applies. A push that fails
// is part of the pass (it is recorded in the stream); the node then applies
// whatever it last received. It returns the apply's report, and whether
// there was anything to apply.
func (m *Mesh) Pass(ctx context.Context, node string) (agent.Report, bool, error) {
	pushErr := m.Push(ctx, node)
	if pushErr != nil && !Recorded(pushErr) {
		return agent.Report{}, false, pushErr
	}
	return m.Apply(ctx, node)
}

// Recorded reports whether a push error is one the stream records (a failed
// compose or send) rather than a failure of the simulator itself.
func Recorded(err error) bool {
	var re *commands.ReadError
	return errors.As(err, &re) || errors.Is(err, commands.ErrIncoherent) || errors.Is(err, ErrBusCut)
}

// CutBus cuts the bus to node: pushes fail, and its reports are kept in its
// outbox.
func (m *Mesh) CutBus(node string) error {
	n, err := m.node(node)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.cut = true
	n.mu.Unlock()
	return nil
}

// RestoreBus restores the bus to node, and the agent delivers what it kept.
func (m *Mesh) RestoreBus(ctx context.Context, node string) error {
	n, err := m.node(node)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.cut = false
	n.mu.Unlock()
	if _, err := n.Agent.Flush(ctx); err != nil {
		return fmt.Errorf("sim: %s delivers its outbox: %w", node, err)
	}
	return nil
}

// RemoveContainersAfterApply makes something outside the mesh remove every
// container on node after each apply.
func (m *Mesh) RemoveContainersAfterApply(node string) error {
	n, err := m.node(node)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.removesAfter = true
	n.mu.Unlock()
	return nil
}

// CatchUp brings the projections up to the store's head.
func (m *Mesh) CatchUp(ctx context.Context) error { return m.Runner.CatchUp(ctx) }

// AppendJSONLines appends events given as JSON lines (the export format and
// the scenario doc-string format) through the store's ordinary append, in
// order. A missing id is filled with a fresh UUIDv7, a missing time with the
// mesh's clock.
func (m *Mesh) AppendJSONLines(ctx context.Context, lines [][]byte) error {
	for i, line := range lines {
		ev, err := events.UnmarshalJSONLine(line)
		if err != nil {
			return fmt.Errorf("sim: event line %d: %w", i+1, err)
		}
		if ev.ID == uuid.Nil {
			ev.ID = events.NewID()
		}
		if ev.At.IsZero() {
			ev.At = m.now()
		}
		if _, err := m.Store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			return fmt.Errorf("sim: event line %d: append %s: %w", i+1, ev.Stream, err)
		}
	}
	return nil
}
