package metrics

import (
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"meshplane/internal/buildinfo"
	"meshplane/projections"
)

// Per node, at scrape time, from the live projections and the controller's
// liveness (what it heard of each agent; never an event):
//
//	meshplane_node_health{node,health}                gauge 1 for the node's health now, 0 for each other state
//	meshplane_node_last_apply_timestamp_seconds{node} gauge when its last recorded apply was made (agent's clock); none before one
//	meshplane_node_last_seen_timestamp_seconds{node}  gauge its last heartbeat the controller heard (controller's clock); none before one
//	meshplane_node_unreachable{node}                  gauge 1 when not heard within the controller's bound (--silent-after)
//	meshplane_build_info{version,goversion}           gauge 1, labelled with the build (controller and agent)

// HealthStates are the values of meshplane_node_health's health label, each
// reported for every node (1 for its health now): a series per state, so
// that a rule can ask for one (health="failing") and see it go to 0.
var HealthStates = []string{
	projections.HealthChurning, projections.HealthFailing, projections.HealthWaitingOnTake, projections.HealthConverged, projections.HealthUnknown,
	projections.HealthCrashLooping, projections.HealthStopped, projections.HealthUnhealthy, projections.HealthStarting,
}

// Seen is what the liveness gauges read (*controller.Controller): node's
// last heartbeat heard (zero: none since the controller started) and
// whether it is unreachable now; on is false when the controller tracks no
// liveness (then neither gauge is reported).
type Seen interface {
	LastSeen(node string) (last time.Time, unreachable, on bool)
}

// nodeGauges is the collector of the per-node gauges.
type nodeGauges Controller

func (g *nodeGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.health, g.lastApply, g.lastSeen, g.unreachable} {
		ch <- d
	}
}

func (g *nodeGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	w := g.watched
	g.mu.Unlock()
	if w == nil {
		return
	}
	seen, _ := w.(Seen)
	views := w.Views()
	for _, node := range views.Status.Nodes() {
		st, err := views.Status.Of(node)
		if err != nil {
			continue // gone between Nodes and Of
		}
		states := HealthStates
		if !slices.Contains(states, st.Health) && st.Health != "" {
			states = append(slices.Clone(states), st.Health) // a state this list does not know yet
		}
		for _, h := range states {
			v := 0.0
			if h == st.Health {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(g.health, prometheus.GaugeValue, v, node, h)
		}
		if a := st.Applied; a != nil && !a.At.IsZero() {
			ch <- prometheus.MustNewConstMetric(g.lastApply, prometheus.GaugeValue, unixSeconds(a.At), node)
		}
		if seen == nil {
			continue
		}
		last, unreachable, on := seen.LastSeen(node)
		if !on {
			continue
		}
		if !last.IsZero() {
			ch <- prometheus.MustNewConstMetric(g.lastSeen, prometheus.GaugeValue, unixSeconds(last), node)
		}
		u := 0.0
		if unreachable {
			u = 1
		}
		ch <- prometheus.MustNewConstMetric(g.unreachable, prometheus.GaugeValue, u, node)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func nodeDescs(m *Controller) {
	m.health = prometheus.NewDesc(namespace+"_node_health",
		"1 for the node's health now (churning, failing, waiting-on-take, converged), 0 for each other state.", []string{"node", "health"}, nil)
	m.lastApply = prometheus.NewDesc(namespace+"_node_last_apply_timestamp_seconds",
		"When the node's last recorded apply was made (the agent's clock), in seconds since the epoch.", []string{"node"}, nil)
	m.lastSeen = prometheus.NewDesc(namespace+"_node_last_seen_timestamp_seconds",
		"The node's last heartbeat the controller heard (the controller's clock), in seconds since the epoch.", []string{"node"}, nil)
	m.unreachable = prometheus.NewDesc(namespace+"_node_unreachable",
		"1 when the node's agent was not heard within the controller's bound (mesh up --silent-after).", []string{"node"}, nil)
}

// buildInfo is meshplane_build_info: 1, labelled with version (the
// build's own when empty, buildinfo.Version) and the Go version.
func buildInfo(version string) prometheus.Collector {
	if version == "" {
		version = buildinfo.Version()
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "1, labelled with the build: meshplane's version and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}

// SetVersion reports version in meshplane_build_info (once; "" is the
// build's own, buildinfo.Version).
func (m *Controller) SetVersion(version string) {
	m.buildOnce.Do(func() { m.reg.MustRegister(buildInfo(version)) })
}
