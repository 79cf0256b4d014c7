package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"meshplane/wire"
)

// Pending is the part of an agent's outbox the depth gauge reads
// (*agent.Outbox).
type Pending interface {
	Pending() ([]wire.Report, error)
}

// Reporter is the agent's (agent.Reporter): it delivers a report and says
// whether the mesh had it already. Declared here so that metrics does not
// link the agent; agent_test.go checks the two agree.
type Reporter interface {
	Report(ctx context.Context, r wire.Report) (duplicate bool, err error)
}

// Agent is one agent's metrics, on a registry of its own. It is safe for
// concurrent use.
type Agent struct {
	reg       *prometheus.Registry
	node      string
	applies   prometheus.Counter
	outcomes  *prometheus.CounterVec
	busErrors prometheus.Counter
}

// NewAgent returns node's agent metrics; the outbox depth is read from box
// at each scrape.
func NewAgent(node string, box Pending) *Agent {
	labels := prometheus.Labels{"node": node}
	m := &Agent{
		reg:  prometheus.NewRegistry(),
		node: node,
		applies: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "agent_applies_total", ConstLabels: labels,
			Help: "Applies this agent made.",
		}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "agent_apply_outcomes_total", ConstLabels: labels,
			Help: "Resources per outcome in this agent's apply reports.",
		}, []string{"kind"}),
		busErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "agent_bus_errors_total", ConstLabels: labels,
			Help: "Report deliveries that failed on the bus (the report is kept and sent again).",
		}),
	}
	for _, k := range kinds {
		m.outcomes.WithLabelValues(k)
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "agent_outbox_depth", ConstLabels: labels,
		Help: "Reports kept in the outbox, not yet taken by the mesh (-1 when the outbox cannot be read).",
	}, func() float64 {
		rs, err := box.Pending()
		if err != nil {
			return -1
		}
		return float64(len(rs))
	})
	m.reg.MustRegister(m.applies, m.outcomes, m.busErrors, depth, buildInfo(""),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(agentPanics(node))
	return m
}

// Registry is the registry every metric of m is on.
func (m *Agent) Registry() *prometheus.Registry { return m.reg }

// Applied counts one apply (agent.RunConfig.Applied), then calls next if
// it is set.
func (m *Agent) Applied(next func(wire.Report)) func(wire.Report) {
	return func(r wire.Report) {
		m.applies.Inc()
		for kind, n := range Outcomes(r.Outcome) {
			add(m.outcomes.WithLabelValues(kind), n)
		}
		if next != nil {
			next(r)
		}
	}
}

// Reporter returns r with every failed delivery counted as a bus error.
func (m *Agent) Reporter(r Reporter) Reporter { return &countingReporter{r, m} }

type countingReporter struct {
	Reporter
	m *Agent
}

func (c *countingReporter) Report(ctx context.Context, r wire.Report) (bool, error) {
	dup, err := c.Reporter.Report(ctx, r)
	if err != nil && ctx.Err() == nil {
		c.m.busErrors.Inc()
	}
	return dup, err
}
