package metrics

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"meshplane/events"
	"meshplane/projections"
)

const namespace = "meshplane"

// Outcome kinds of apply reports (the kind label).
const (
	KindCreated   = "created"
	KindUpdated   = "updated"
	KindReplaced  = "replaced"
	KindRemoved   = "removed"
	KindHeld      = "held"
	KindFailed    = "failed"
	KindUnchanged = "unchanged"
)

// Push results (the result label of meshplane_pushes_total).
const (
	ResultPushed        = "pushed"
	ResultPushFailed    = "push-failed"
	ResultComposeFailed = "compose-failed"
)

// Watched is what the controller's scrape-time gauges read: its
// projections and the runner that feeds them (*controller.Controller).
type Watched interface {
	Runner() *projections.Runner
	Views() *projections.Set
}

// Controller is the controller's metrics, on a registry of its own.
// It is safe for concurrent use.
type Controller struct {
	reg   *prometheus.Registry
	clock func() time.Time

	appended      *prometheus.CounterVec
	appendSeconds prometheus.Histogram
	appendErrors  prometheus.Counter
	pushes        *prometheus.CounterVec
	outcomes      *prometheus.CounterVec
	refused       *prometheus.CounterVec
	deferred      prometheus.Counter

	mu      sync.Mutex // guards what follows
	watched Watched
	store   events.Store

	lagEvents, lagSeconds, position, holds, churning, composeFailed, pending *prometheus.Desc
	container, restarts                                                      *prometheus.Desc
	chainHead                                                                *prometheus.Desc
	health, lastApply, lastSeen, unreachable                                 *prometheus.Desc // nodes.go

	buildOnce sync.Once
}

// NewController returns the controller's metrics, with the Go runtime and
// process collectors registered beside them. clock is what the lag in
// seconds is measured against (nil: time.Now).
func NewController(clock func() time.Time) *Controller {
	if clock == nil {
		clock = time.Now
	}
	m := &Controller{
		reg:   prometheus.NewRegistry(),
		clock: clock,
		appended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "events_appended_total",
			Help: "Events appended to the store since the controller started, by type.",
		}, []string{"type"}),
		appendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "store_append_seconds",
			Help:    "Duration of one append to the event store, successful or not.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100µs .. 26s
		}),
		appendErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "store_append_errors_total",
			Help: "Appends to the event store that failed.",
		}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "pushes_total",
			Help: "Pushes by result: pushed, push-failed (the bus refused), compose-failed (nothing pushed).",
		}, []string{"result"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "apply_outcomes_total",
			Help: "Resources per outcome in the apply reports recorded.",
		}, []string{"kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reports_refused_total",
			Help: "Report messages the controller refused for good (terminated on the bus), by reason.",
		}, []string{"reason"}),
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "reports_deferred_total",
			Help: "Reports deferred on the bus because their node sent faster than its rate limit (each is recorded in its turn).",
		}),
		lagEvents: prometheus.NewDesc(namespace+"_projection_lag_events",
			"Events in the store the projections have not folded yet.", nil, nil),
		lagSeconds: prometheus.NewDesc(namespace+"_projection_lag_seconds",
			"Age of the oldest event the projections have not folded yet (0 when caught up).", nil, nil),
		position: prometheus.NewDesc(namespace+"_projection_position",
			"The last position the projections folded.", nil, nil),
		chainHead: prometheus.NewDesc(namespace+"_store_chain_head",
			"The event store's hash chain head: its position, labelled with its chain value (mesh store head; keep it off the host to prove the history with mesh store verify --anchor).", []string{"chain"}, nil),
		holds: prometheus.NewDesc(namespace+"_holds",
			"Resources held now for untaken modules (each node's latest apply), by module.", []string{"module"}, nil),
		churning: prometheus.NewDesc(namespace+"_churn_loops_active",
			"Nodes with a churn loop or flip open now.", nil, nil),
		composeFailed: prometheus.NewDesc(namespace+"_node_compose_failed",
			"1 when the node's latest compose failed (it is failing until a compose succeeds, whatever its agent re-applies), else 0.", []string{"node"}, nil),
		pending: prometheus.NewDesc(namespace+"_node_modules_pending",
			"Modules assigned to the node and absent from its applied declaration (not composed, or not applied yet).", []string{"node"}, nil),
		container: prometheus.NewDesc(namespace+"_container_state",
			"1 for the state the engine runs each declared container in, as its node's agent last said (starting, running, unhealthy, crash-looping, exited, oom-killed, vanished); a node whose agent says nothing of its containers has none.", []string{"node", "module", "container", "state"}, nil),
		restarts: prometheus.NewDesc(namespace+"_container_restarts",
			"Restarts of a crash-looping container since its episode began (0 when it is not crash-looping).", []string{"node", "module", "container"}, nil),
	}
	nodeDescs(m)
	for _, r := range []string{ResultPushed, ResultPushFailed, ResultComposeFailed} {
		m.pushes.WithLabelValues(r)
	}
	for _, k := range kinds {
		m.outcomes.WithLabelValues(k)
	}
	for _, r := range append(events.RefusedReasons(), ReasonOther) {
		m.refused.WithLabelValues(r)
	}
	m.reg.MustRegister(m.appended, m.appendSeconds, m.appendErrors, m.pushes, m.outcomes, m.refused, m.deferred, (*gauges)(m), (*nodeGauges)(m),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(controllerPanics())
	return m
}

var kinds = []string{KindCreated, KindUpdated, KindReplaced, KindRemoved, KindHeld, KindFailed, KindUnchanged}

// ReasonOther is the reason label of a refusal whose reason is not one of
// events.RefusedReasons (the label set stays fixed whatever a caller says).
const ReasonOther = "other"

// ReportRefused counts one report message refused for good, by reason (the
// report door: the bus consumer's wiring calls it, for every refusal,
// including a node's that is not registered and so has no report.refused
// event to count from).
func (m *Controller) ReportRefused(reason string) {
	if !slices.Contains(events.RefusedReasons(), reason) {
		reason = ReasonOther
	}
	m.refused.WithLabelValues(reason).Inc()
}

// ReportsDeferred counts n reports deferred by the per-node rate limit.
func (m *Controller) ReportsDeferred(n uint64) { add(m.deferred, n) }

// add adds n to c if it is positive: a counter never decreases, and a
// Prometheus counter panics if told to. Every count of a value that came
// from outside (a report's counts) goes through here.
func add[N int | uint64](c prometheus.Counter, n N) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// Registry is the registry every metric of m is on.
func (m *Controller) Registry() *prometheus.Registry { return m.reg }

// Watch makes the scrape-time gauges read w's projections and store (the
// store's head, and the first event not yet folded). Before Watch they are
// not reported.
func (m *Controller) Watch(w Watched, store events.Store) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watched, m.store = w, store
}

// Store returns s with every Append timed and its failures counted. The
// events it appends are counted by Run, from the stream, so an append that
// was a no-op (every id stored already) counts nothing.
func (m *Controller) Store(s events.Store) events.Store { return &timedStore{Store: s, m: m} }

// timedStore is the metrics decorator of an events.Store.
type timedStore struct {
	events.Store
	m *Controller
}

var _ events.Store = (*timedStore)(nil)

// Append times the inner Append.
func (s *timedStore) Append(ctx context.Context, stream string, expected events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	start := time.Now()
	out, err := s.Store.Append(ctx, stream, expected, evs...)
	s.m.appendSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.appendErrors.Inc()
	}
	return out, err
}

// Run follows store from its head as it is now, counting each event
// appended after it (by type, and pushes and apply outcomes from their
// payloads), until ctx ends (nil) or the store fails.
func (m *Controller) Run(ctx context.Context, store events.Store, reg *events.Registry) error {
	head, err := store.Head(ctx)
	if err != nil {
		return fmt.Errorf("metrics: head: %w", err)
	}
	return m.Follow(ctx, store, reg, head)
}

// Follow is Run counting the events after position after.
func (m *Controller) Follow(ctx context.Context, store events.Store, reg *events.Registry, after uint64) error {
	cp := projections.NewMemCheckpoints()
	if err := cp.Save(ctx, foldName, after); err != nil {
		return err
	}
	r := projections.NewRunnerWithCheckpoints(store, reg, cp, foldName, (*fold)(m))
	r.OnPanic(reportPanic)
	if err := r.Run(ctx); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

const foldName = "metrics"

// fold is the projection that counts: it keeps no state of its own but the
// counters.
type fold Controller

var _ projections.Projection = (*fold)(nil)

func (f *fold) Name() string                 { return foldName }
func (f *fold) Reset()                       {}
func (f *fold) MarshalJSON() ([]byte, error) { return []byte("{}"), nil }

// Fold counts ev.
func (f *fold) Fold(ev events.Event, p events.Payload) error {
	f.appended.WithLabelValues(ev.Type).Inc()
	switch v := p.(type) {
	case events.DeclarationPushed:
		f.pushes.WithLabelValues(ResultPushed).Inc()
	case events.DeclarationPushFailed:
		f.pushes.WithLabelValues(ResultPushFailed).Inc()
	case events.DeclarationComposeFailed:
		f.pushes.WithLabelValues(ResultComposeFailed).Inc()
	case events.ApplyReported:
		for kind, n := range Outcomes(v) {
			add(f.outcomes.WithLabelValues(kind), n)
		}
	}
	return nil
}

// Outcomes counts a's resources per outcome kind. Held is counted from the
// totals (sent, neither applied nor failed), so a compact report (its held
// list in an earlier one) counts the same as a full one. No count is below
// zero, whatever a says: the door refuses a report whose counts disagree,
// but history may hold one (an import), and a counter is never decreased.
func Outcomes(a events.ApplyReported) map[string]int {
	held := max(0, max(0, a.Sent)-max(0, a.Applied)-len(a.Failed))
	return map[string]int{
		KindCreated: len(a.Created), KindUpdated: len(a.Updated), KindReplaced: len(a.Replaced),
		KindRemoved: len(a.Removed), KindHeld: held, KindFailed: len(a.Failed), KindUnchanged: max(0, a.Unchanged),
	}
}

// gauges is the collector of the scrape-time gauges.
type gauges Controller

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.lagEvents, g.lagSeconds, g.position, g.holds, g.churning, g.composeFailed, g.pending, g.chainHead, g.container, g.restarts} {
		ch <- d
	}
}

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	w, store := g.watched, g.store
	g.mu.Unlock()
	if w == nil {
		return
	}
	r, views := w.Runner(), w.Views()
	pos := r.Position()
	ch <- prometheus.MustNewConstMetric(g.position, prometheus.GaugeValue, float64(pos))
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	g.collectLag(ctx, ch, store, pos)
	if h, err := store.ChainHead(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(g.chainHead, fmt.Errorf("metrics: chain head: %w", err))
	} else {
		ch <- prometheus.MustNewConstMetric(g.chainHead, prometheus.GaugeValue, float64(h.Position), h.Chain.String())
	}
	for module, n := range HeldByModule(views.Holds) {
		ch <- prometheus.MustNewConstMetric(g.holds, prometheus.GaugeValue, float64(n), module)
	}
	active := 0
	for _, n := range views.Churn.Nodes() {
		if views.Churn.Active(n) {
			active++
		}
	}
	ch <- prometheus.MustNewConstMetric(g.churning, prometheus.GaugeValue, float64(active))
	for _, n := range views.Status.Nodes() {
		st, err := views.Status.Of(n)
		if err != nil {
			continue // a node gone between Nodes and Of: nothing to say of it
		}
		failed, pending := ComposeAxis(st)
		ch <- prometheus.MustNewConstMetric(g.composeFailed, prometheus.GaugeValue, failed, n)
		ch <- prometheus.MustNewConstMetric(g.pending, prometheus.GaugeValue, float64(pending), n)
		for name, c := range st.Containers {
			ch <- prometheus.MustNewConstMetric(g.container, prometheus.GaugeValue, 1, n, c.Module, name, c.State)
			r := 0.0
			if c.State == events.WorkloadCrashLooping {
				r = float64(c.Restarts)
			}
			ch <- prometheus.MustNewConstMetric(g.restarts, prometheus.GaugeValue, r, n, c.Module, name)
		}
	}
}

// ComposeAxis is what the node's status says of its compose: 1 when its
// latest compose failed (else 0), and how many of its modules are
// pending (assigned, absent from the applied declaration).
func ComposeAxis(st projections.NodeStatus) (failed float64, pending int) {
	if st.ComposeFailed != nil {
		failed = 1
	}
	for _, ms := range st.Modules {
		if ms.State == projections.ModulePending {
			pending++
		}
	}
	return failed, pending
}

// collectLag reports how far the projections at pos are behind store.
func (g *gauges) collectLag(ctx context.Context, ch chan<- prometheus.Metric, store events.Store, pos uint64) {
	head, err := store.Head(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.lagEvents, fmt.Errorf("metrics: head: %w", err))
		return
	}
	lag := head - min(head, pos)
	ch <- prometheus.MustNewConstMetric(g.lagEvents, prometheus.GaugeValue, float64(lag))
	secs := 0.0
	if lag > 0 {
		evs, err := store.ReadAll(ctx, pos, 1)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(g.lagSeconds, fmt.Errorf("metrics: read after %d: %w", pos, err))
			return
		}
		if len(evs) == 1 {
			secs = max(0, g.clock().Sub(evs[0].At).Seconds())
		}
	}
	ch <- prometheus.MustNewConstMetric(g.lagSeconds, prometheus.GaugeValue, secs)
}

// HeldByModule counts what h holds now, per module, over every node.
func HeldByModule(h *projections.Holds) map[string]int {
	out := map[string]int{}
	for _, n := range h.Nodes() {
		held, err := h.Of(n)
		if err != nil {
			continue // a node gone between Nodes and Of holds nothing
		}
		for _, x := range held {
			out[x.Module]++
		}
	}
	return out
}
