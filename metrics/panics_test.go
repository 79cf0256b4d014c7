package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"meshplane/agent"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/internal/safego"
	"meshplane/internal/testwait"
	"meshplane/metrics"
)

// scrape returns reg's exposition, in the text format.
func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestPanicsCounted: a panic recovered at a boundary is served by both
// registries, under its where (the agent's with its node); a boundary used
// but never panicked is served as 0.
func TestPanicsCounted(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	_ = safego.Call("metrics.test.calm", quiet, func() error { return nil })
	for range 3 {
		_ = safego.Call("metrics.test.panicky", quiet, func() error { panic("counter cannot decrease in value") })
	}
	ctl := scrape(t, metrics.NewControllerMetrics(nil).Registry())
	ag := scrape(t, metrics.NewAgent("n1", emptyOutbox{}).Registry())
	for _, want := range []string{
		`meshplane_panics_total{where="metrics.test.panicky"} 3`,
		`meshplane_panics_total{where="metrics.test.calm"} 0`,
		"# TYPE meshplane_panics_total counter",
	} {
		if !strings.Contains(ctl, want) {
			t.Errorf("controller scrape lacks %q", want)
		}
	}
	for _, want := range []string{
		`meshplane_agent_panics_total{node="n1",where="metrics.test.panicky"} 3`,
		`meshplane_agent_panics_total{node="n1",where="metrics.test.calm"} 0`,
	} {
		if !strings.Contains(ag, want) {
			t.Errorf("agent scrape lacks %q", want)
		}
	}
}

// emptyOutbox is an outbox holding nothing.
type emptyOutbox struct{}

func (emptyOutbox) Pending() ([]agent.Report, error) { return nil, nil }

// TestFollowerOutlivesABadReport: a report in the stream whose counts the
// counters cannot take (the unchanged -1: a Prometheus counter
// panics on a negative add) never stops the follower: a panic is counted
// (projections.fold) and logged, the event passed over, and the events
// after it counted.
func TestFollowerOutlivesABadReport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := metrics.NewControllerMetrics(nil)
	store := memstore.New()
	defer store.Close()
	followed := make(chan error, 1)
	go func() { followed <- m.Follow(ctx, store, events.NewRegistry(), 0) }()
	before := safego.Panics()["projections.fold"]
	for _, ev := range []events.Event{
		{ID: events.NewID(), Type: events.TypeApplyReported, Schema: 1, At: time.Now(),
			Data: []byte(`{"node":"n1","declaration":"n1/1","unchanged":-1,"sent":0,"applied":0,"created":[]}`)},
		{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1, At: time.Now(), Data: []byte(`{"node":"n2"}`)},
	} {
		if _, err := store.Append(ctx, "node-n1", events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Eventually(t, 20*time.Second, func() error { // the event after the bad report counted
		return testutil.GatherAndCompare(m.Registry(), strings.NewReader(`# HELP meshplane_events_appended_total Events appended to the store since the controller started, by type.
# TYPE meshplane_events_appended_total counter
meshplane_events_appended_total{type="apply.reported"} 1
meshplane_events_appended_total{type="node.registered"} 1
`), "meshplane_events_appended_total")
	})
	select {
	case err := <-followed:
		t.Fatalf("the follower stopped: %v", err)
	default:
	}
	// Where the counters still panic on it, the panic is counted once.
	if d := safego.Panics()["projections.fold"] - before; d > 1 {
		t.Errorf("projections.fold panics counted %d, want at most 1", d)
	}
}
