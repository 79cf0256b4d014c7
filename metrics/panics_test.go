package metrics_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"meshplane/agent"
	"meshplane/internal/safego"
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
	ctl := scrape(t, metrics.NewController(nil).Registry())
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
