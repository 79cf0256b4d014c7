package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/internal/testwait"
	"meshplane/metrics"
	"meshplane/projections"
	"meshplane/sim"
)

// watched adapts a simulated mesh to metrics.Watched.
type watched struct{ m *sim.Mesh }

func (w watched) Runner() *projections.Runner { return w.m.Runner }
func (w watched) Views() *projections.Set     { return w.m.Views }

// expected counts, from the store alone, what the counters must say.
func expected(t *testing.T, ctx context.Context, store events.Store) string {
	t.Helper()
	all, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	reg, res := events.NewRegistry(), projections.NewReports()
	byType := map[string]int{}
	pushes := map[string]int{metrics.ResultPushed: 0, metrics.ResultPushFailed: 0, metrics.ResultComposeFailed: 0}
	kinds := map[string]int{}
	for _, ev := range all {
		byType[ev.Type]++
		switch ev.Type {
		case events.TypeDeclarationPushed:
			pushes[metrics.ResultPushed]++
		case events.TypeDeclarationPushFailed:
			pushes[metrics.ResultPushFailed]++
		case events.TypeDeclarationComposeFailed:
			pushes[metrics.ResultComposeFailed]++
		case events.TypeApplyReported:
			a, err := events.DecodeAs[events.ApplyReported](reg, ev)
			if err != nil {
				t.Fatal(err)
			}
			// The held list resolved in full, not the counter's arithmetic.
			if a, err = res.Resolve(ev, a); err != nil {
				t.Fatal(err)
			}
			kinds[metrics.KindCreated] += len(a.Created)
			kinds[metrics.KindUpdated] += len(a.Updated)
			kinds[metrics.KindReplaced] += len(a.Replaced)
			kinds[metrics.KindRemoved] += len(a.Removed)
			kinds[metrics.KindHeld] += len(a.Held)
			kinds[metrics.KindFailed] += len(a.Failed)
			kinds[metrics.KindUnchanged] += a.Unchanged
		}
	}
	var b strings.Builder
	b.WriteString("# HELP meshplane_events_appended_total Events appended to the store since the controller started, by type.\n# TYPE meshplane_events_appended_total counter\n")
	for _, typ := range slices.Sorted(mapsKeys(byType)) {
		fmt.Fprintf(&b, "meshplane_events_appended_total{type=%q} %d\n", typ, byType[typ])
	}
	b.WriteString("# HELP meshplane_pushes_total Pushes by result: pushed, push-failed (the bus refused), compose-failed (nothing pushed).\n# TYPE meshplane_pushes_total counter\n")
	for _, r := range slices.Sorted(mapsKeys(pushes)) {
		fmt.Fprintf(&b, "meshplane_pushes_total{result=%q} %d\n", r, pushes[r])
	}
	b.WriteString("# HELP meshplane_apply_outcomes_total Resources per outcome in the apply reports recorded.\n# TYPE meshplane_apply_outcomes_total counter\n")
	for _, k := range []string{"created", "failed", "held", "removed", "replaced", "unchanged", "updated"} {
		fmt.Fprintf(&b, "meshplane_apply_outcomes_total{kind=%q} %d\n", k, kinds[k])
	}
	return b.String()
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestControllerAfterPasses runs a generated mesh (adopted nodes, churn,
// failing reads, bus cuts) through a store the metrics wrap, and checks
// every metric against what the store and the projections say.
func TestControllerAfterPasses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := sim.Epoch.Add(24 * time.Hour)
	m := metrics.NewControllerMetrics(func() time.Time { return now })
	store := memstore.New()
	defer store.Close()
	ts := m.Store(store)
	followed := make(chan error, 1)
	go func() { followed <- m.Follow(ctx, ts, events.NewRegistry(), 0) }()

	mesh := sim.New(ts)
	if err := mesh.Generate(ctx, smallWorkload, 250); err != nil {
		t.Fatal(err)
	}
	if err := mesh.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	m.Watch(watched{mesh}, ts)
	reg := m.Registry()

	want := expected(t, ctx, store)
	testwait.Eventually(t, 20*time.Second, func() error { // counters
		return testutil.GatherAndCompare(reg, strings.NewReader(want),
			"meshplane_events_appended_total", "meshplane_pushes_total", "meshplane_apply_outcomes_total")
	})
	if !strings.Contains(want, `kind="held"} `) || strings.Contains(want, `kind="held"} 0`) {
		t.Fatalf("the workload held nothing: the test checks too little\n%s", want)
	}

	// Appends: timed, none failed.
	if n, err := testutil.GatherAndCount(reg, "meshplane_store_append_seconds"); err != nil || n != 1 {
		t.Errorf("append histogram: %d series (%v), want 1", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP meshplane_store_append_errors_total Appends to the event store that failed.
# TYPE meshplane_store_append_errors_total counter
meshplane_store_append_errors_total 0
`), "meshplane_store_append_errors_total"); err != nil {
		t.Error(err)
	}

	// Gauges read from the projections.
	var g strings.Builder
	g.WriteString("# HELP meshplane_holds Resources held now for untaken modules (each node's latest apply), by module.\n# TYPE meshplane_holds gauge\n")
	held := map[string]int{}
	for _, n := range mesh.Views.Holds.Nodes() {
		hs, err := mesh.Views.Holds.Of(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			held[h.Module]++
		}
	}
	if len(held) == 0 {
		t.Fatal("nothing held at the end of the workload: the test checks too little")
	}
	for _, mod := range slices.Sorted(mapsKeys(held)) {
		fmt.Fprintf(&g, "meshplane_holds{module=%q} %d\n", mod, held[mod])
	}
	churning := 0
	for _, n := range mesh.Views.Churn.Nodes() {
		if mesh.Views.Churn.Active(n) {
			churning++
		}
	}
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&g, "# HELP meshplane_churn_loops_active Nodes with a churn loop or flip open now.\n# TYPE meshplane_churn_loops_active gauge\nmeshplane_churn_loops_active %d\n", churning)
	fmt.Fprintf(&g, "# HELP meshplane_projection_lag_events Events in the store the projections have not folded yet.\n# TYPE meshplane_projection_lag_events gauge\nmeshplane_projection_lag_events 0\n")
	fmt.Fprintf(&g, "# HELP meshplane_projection_lag_seconds Age of the oldest event the projections have not folded yet (0 when caught up).\n# TYPE meshplane_projection_lag_seconds gauge\nmeshplane_projection_lag_seconds 0\n")
	fmt.Fprintf(&g, "# HELP meshplane_projection_position The last position the projections folded.\n# TYPE meshplane_projection_position gauge\nmeshplane_projection_position %d\n", head)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(g.String()),
		"meshplane_holds", "meshplane_churn_loops_active", "meshplane_projection_lag_events",
		"meshplane_projection_lag_seconds", "meshplane_projection_position"); err != nil {
		t.Error(err)
	}

	// One event the projections have not folded: a lag of one event, as
	// old as its time.
	at := now.Add(-90 * time.Second)
	if _, err := ts.Append(ctx, "node-lag", events.Any, events.Event{
		ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1, At: at, Data: []byte(`{"node":"lag"}`),
	}); err != nil {
		t.Fatal(err)
	}
	lag := fmt.Sprintf(`# HELP meshplane_projection_lag_events Events in the store the projections have not folded yet.
# TYPE meshplane_projection_lag_events gauge
meshplane_projection_lag_events 1
# HELP meshplane_projection_lag_seconds Age of the oldest event the projections have not folded yet (0 when caught up).
# TYPE meshplane_projection_lag_seconds gauge
meshplane_projection_lag_seconds %d
`, 90)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(lag), "meshplane_projection_lag_events", "meshplane_projection_lag_seconds"); err != nil {
		t.Error(err)
	}

	cancel()
	if err := <-followed; err != nil {
		t.Errorf("follow: %v", err)
	}
}

func TestHandlerToken(t *testing.T) {
	m := metrics.NewControllerMetrics(nil)
	srv := httptest.NewServer(metrics.Handler(m.Registry(), "s3cret"))
	defer srv.Close()
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"not bearer", "Basic s3cret", http.StatusUnauthorized},
		{"the token", "Bearer s3cret", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+metrics.Path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status == http.StatusOK && !strings.Contains(string(body), "meshplane_pushes_total") {
				t.Errorf("scrape lacks meshplane_pushes_total:\n%s", body)
			}
		})
	}
}

// smallWorkload has every kind of fault of sim.DefaultWorkload on half the
// mesh, so a run under -race stays short.
var smallWorkload = sim.Workload{
	Nodes: 6, Modules: 8, Containers: 2, ModulesPerNode: 2,
	ChurnEvery: 3, FlakyEvery: 5, ReassignEvery: 3, BusCutEvery: 4, AdoptedEvery: 2,
}

// TestControllerNeverPanicsOnOutsideValues: a report whose counts are
// below zero (history may hold one, by import, though the door refuses
// it) is folded without a panic and adds nothing where it is negative; a
// refusal with a reason outside the fixed set counts as other.
func TestControllerNeverPanicsOnOutsideValues(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := metrics.NewControllerMetrics(nil)
	store := memstore.New()
	defer store.Close()
	followed := make(chan error, 1)
	go func() { followed <- m.Follow(ctx, store, events.NewRegistry(), 0) }()

	reg := events.NewRegistry()
	for i, a := range []events.ApplyReported{
		{Node: "n1", Declaration: "n1/1", Unchanged: -1, Sent: 0, Applied: 0, Created: []string{}},
		{Node: "n1", Declaration: "n1/1", Unchanged: -5, Sent: -3, Applied: -9},
		{Node: "n1", Declaration: "n1/1", Unchanged: 2, Sent: 3, Applied: 3, Created: []string{"web"}},
	} {
		ev, err := reg.New("node-n1", a, events.Meta{ID: events.NewID(), At: time.Date(2026, 11, 30, 9, i, 0, 0, time.UTC), Actor: "agent:n1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, "node-n1", events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	m.ReportRefused(events.RefusedCounts)
	m.ReportRefused(events.RefusedCounts)
	m.ReportRefused("made-up")
	m.ReportsDeferred(0)
	m.ReportsDeferred(7)

	want := `# HELP meshplane_apply_outcomes_total Resources per outcome in the apply reports recorded.
# TYPE meshplane_apply_outcomes_total counter
meshplane_apply_outcomes_total{kind="created"} 1
meshplane_apply_outcomes_total{kind="failed"} 0
meshplane_apply_outcomes_total{kind="held"} 0
meshplane_apply_outcomes_total{kind="removed"} 0
meshplane_apply_outcomes_total{kind="replaced"} 0
meshplane_apply_outcomes_total{kind="unchanged"} 2
meshplane_apply_outcomes_total{kind="updated"} 0
`
	testwait.Eventually(t, 20*time.Second, func() error { // outcomes
		return testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "meshplane_apply_outcomes_total")
	})
	var b strings.Builder
	b.WriteString("# HELP meshplane_reports_refused_total Report messages the controller refused for good (terminated on the bus), by reason.\n# TYPE meshplane_reports_refused_total counter\n")
	for _, r := range slices.Sorted(slices.Values(append(events.RefusedReasons(), metrics.ReasonOther))) {
		n := 0
		switch r {
		case events.RefusedCounts:
			n = 2
		case metrics.ReasonOther:
			n = 1
		}
		fmt.Fprintf(&b, "meshplane_reports_refused_total{reason=%q} %d\n", r, n)
	}
	b.WriteString("# HELP meshplane_reports_deferred_total Reports deferred on the bus because their node sent faster than its rate limit (each is recorded in its turn).\n# TYPE meshplane_reports_deferred_total counter\nmeshplane_reports_deferred_total 7\n")
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(b.String()),
		"meshplane_reports_refused_total", "meshplane_reports_deferred_total"); err != nil {
		t.Error(err)
	}
	cancel()
	if err := <-followed; err != nil {
		t.Fatalf("the fold stopped: %v", err)
	}
}
