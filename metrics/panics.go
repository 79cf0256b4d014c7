package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"meshplane/internal/safego"
)

// panics is the collector of the panics recovered in this process
// (package safego), by the boundary that recovered them: read at each
// scrape, since safego counts them for the whole process.
type panics struct{ desc *prometheus.Desc }

func newPanics(name, help string, constLabels prometheus.Labels) panics {
	return panics{prometheus.NewDesc(namespace+"_"+name, help, []string{"where"}, constLabels)}
}

func (p panics) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p panics) Collect(ch chan<- prometheus.Metric) {
	for where, n := range safego.Panics() {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.CounterValue, float64(n), where)
	}
}

// controllerPanics and agentPanics are the two processes' panic counters.
func controllerPanics() panics {
	return newPanics("panics_total",
		"Panics recovered in this controller, by the goroutine's boundary that recovered them (a handler carried on; a loop stopped the process).", nil)
}

func agentPanics(node string) panics {
	return newPanics("agent_panics_total",
		"Panics recovered in this agent, by the goroutine's boundary that recovered them (a handler carried on; a loop stopped the process).",
		prometheus.Labels{"node": node})
}

// reportPanic logs and counts a fold of the counters that panicked
// (safego.Report; the event is counted no further): the follower carries on.
func reportPanic(err error) { safego.Report(nil, err) }
