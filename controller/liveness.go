package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
)

// DefaultSilentAfter is how long a node may go unheard (no heartbeat)
// before status says it is unreachable and the leader records
// node.went-silent (`mesh up --silent-after`).
const DefaultSilentAfter = 30 * time.Second

// Liveness (Config.SilentAfter > 0): the bus hands the controller each
// agent heartbeat (Heard); the controller keeps the last one of each node in
// memory, by its own clock, never as an event. A node unheard for longer
// than the bound is unreachable: status says sync "unreachable" with its
// last seen time, on a leader and a standby alike. Only the transitions are
// events, appended by the leader alone (CheckLiveness, run every quarter of
// the bound and at once when a silent node is heard): node.went-silent and
// node.came-back, each decided against the node's stream
// (commands.RecordWentSilent), so asking twice appends once.
//
// A node never heard (no heartbeat since this controller started, and no
// report from it in history: projections.Status.Heard) is not silent,
// however long ago it joined: its agent may start minutes later, as
// `mesh agent install` says. Its sync stays unreported until its first
// heartbeat, never unreachable, and no node.went-silent is recorded for it.
// Only a node heard and then unheard for longer than the bound goes silent.
//
// A controller that starts leading has heard nobody yet: every node is
// given one bound of grace from then (lead time) before it can go silent,
// so a fresh leader does not record a went-silent for every node at start.
// A node that history says is silent and is heard again comes back.
type liveness struct {
	bound time.Duration

	checkMu sync.Mutex // one CheckLiveness at a time (Run's and a test's)

	mu     sync.Mutex
	seen   map[string]time.Time // node → last heartbeat heard, controller's clock
	agents map[string]string    // node → the agent version its last heartbeat said
	silent map[string]bool      // node → its last transition as this leader knows it (absent: not asked yet)
	since  time.Time            // when this controller started tracking (Run)
	leads  time.Time            // when it started leading: the grace of the transitions
	kick   chan struct{}        // a silent node was heard: check now
}

func newLiveness(bound time.Duration) *liveness {
	if bound <= 0 {
		return nil
	}
	return &liveness{bound: bound, seen: map[string]time.Time{}, agents: map[string]string{}, silent: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// HeardAgent is Heard of a heartbeat that said its agent's version:
// status shows it beside the last heartbeat (AgentVersion).
func (c *Controller) HeardAgent(node, version string) {
	if l := c.live; l != nil && version != "" {
		l.mu.Lock()
		l.agents[node] = version
		l.mu.Unlock()
	}
	c.Heard(node)
}

// Heard records a heartbeat of node, heard now (the controller's clock).
// The bus's heartbeat subscription calls it; it never blocks. Without
// Config.SilentAfter it does nothing.
func (c *Controller) Heard(node string) {
	l := c.live
	if l == nil {
		return
	}
	now := c.clock()
	l.mu.Lock()
	if now.After(l.seen[node]) {
		l.seen[node] = now
	}
	wasSilent := l.silent[node]
	l.mu.Unlock()
	if wasSilent {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// startTracking marks when Run began hearing, and when it leads.
func (l *liveness) startTracking(now time.Time, leading bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since = now
	if leading {
		l.leads = now
	}
}

// lead starts the grace of a controller that starts leading: what it knew of
// the nodes' transitions is asked again of their streams.
func (l *liveness) lead(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leads = now
	clear(l.silent)
}

// view is what status shows of node's liveness at now: its last heartbeat
// (zero: none heard), the agent version it said, and whether the node is
// unreachable (unheard for longer than the bound since it was last heard,
// or since tracking began).
func (l *liveness) view(node string, now time.Time) (last time.Time, agent string, unreachable bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last = l.seen[node]
	from := last
	if from.Before(l.since) {
		from = l.since
	}
	return last, l.agents[node], !l.since.IsZero() && now.Sub(from) > l.bound
}

// withLiveness puts what the controller heard of st's node into st: LastSeen, and
// sync "unreachable" when it is (never for a node never heard).
func (c *Controller) withLiveness(st *api.NodeStatus) {
	if c.live == nil {
		return
	}
	last, agent, unreachable := c.live.view(st.Node, c.clock())
	if !last.IsZero() {
		l := last.UTC()
		st.LastSeen, st.AgentVersion = &l, agent
	}
	if unreachable && (!last.IsZero() || c.views.Status.Heard(st.Node)) {
		st.Sync = api.SyncUnreachable
	}
}

// LastSeen is what the controller heard of node: its last heartbeat (zero:
// none since it started), whether it is unreachable now (never a node
// never heard), and whether the controller tracks liveness at all (on).
// The metrics read it.
func (c *Controller) LastSeen(node string) (last time.Time, unreachable, on bool) {
	if c.live == nil {
		return time.Time{}, false, false
	}
	last, _, unreachable = c.live.view(node, c.clock())
	return last, unreachable && (!last.IsZero() || c.views.Status.Heard(node)), true
}

// CheckLiveness records the liveness transitions due now: node.went-silent
// for each node heard once and unheard since for longer than the bound
// (from its last heartbeat, or from when this controller started leading,
// whichever is later; a node never heard is skipped),
// node.came-back for each node heard within the bound whose last
// transition is a went-silent. Each is appended once per transition (see
// commands.RecordWentSilent); a node whose state is known needs no read.
// A standby, or a controller without liveness, does nothing. Run calls it;
// tests drive it with a fake clock.
func (c *Controller) CheckLiveness(ctx context.Context) ([]events.Event, error) {
	l := c.live
	if l == nil || c.standby.Load() {
		return nil, nil
	}
	l.checkMu.Lock()
	defer l.checkMu.Unlock()
	// The nodes are the projections': a controller that just started has
	// not folded them all yet.
	if err := c.Sync(ctx); err != nil {
		return nil, err
	}
	now := c.clock()
	type due struct {
		node   string
		last   time.Time
		silent bool // went silent (else came back)
	}
	var todo []due
	l.mu.Lock()
	leads := l.leads
	if leads.IsZero() {
		leads = now // leading from this check on
		l.leads = now
	}
	for _, node := range c.views.Status.Nodes() {
		last := l.seen[node]
		from := last
		if from.Before(leads) {
			from = leads
		}
		alive := now.Sub(from) <= l.bound
		heard := !last.IsZero() || c.views.Status.Heard(node)
		silent, known := l.silent[node]
		switch {
		case !alive && heard && (!known || !silent):
			todo = append(todo, due{node, last, true})
		case alive && !last.IsZero() && (!known || silent):
			todo = append(todo, due{node, last, false})
		}
	}
	l.mu.Unlock()

	var out []events.Event
	var errs []error
	for _, d := range todo {
		var evs []events.Event
		var err error
		// A report appended meanwhile (an agent coming back sends both) moves
		// the stream on: decided again on a fresh read, a few times.
		for range 3 {
			if d.silent {
				evs, err = c.handler.RecordWentSilent(ctx, commands.WentSilent{Node: d.node, LastSeen: d.last, Bound: l.bound})
			} else {
				evs, err = c.handler.RecordCameBack(ctx, d.node, d.last)
			}
			if !errors.Is(err, events.ErrWrongExpectedVersion) {
				break
			}
		}
		var rej *commands.Rejection
		switch {
		case errors.As(err, &rej) && rej.Code == commands.CodeNodeUnknown:
			continue // not registered: it has no stream to record on
		case err != nil:
			errs = append(errs, err) // asked again at the next check
			continue
		}
		l.mu.Lock()
		l.silent[d.node] = d.silent
		l.mu.Unlock()
		out = append(out, evs...)
	}
	if err := c.folded(ctx, out); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// every is how often Run checks liveness: a quarter of the bound,
// at least every 100 ms.
func (l *liveness) every() time.Duration { return max(l.bound/4, 100*time.Millisecond) }
