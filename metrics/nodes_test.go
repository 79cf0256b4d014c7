package metrics_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"meshplane/events/memstore"
	"meshplane/metrics"
	"meshplane/sim"
)

// seenWatched is a simulated mesh with a controller's liveness: every
// node but the last heard at seen, the last never heard and unreachable.
type seenWatched struct {
	watched
	seen time.Time
	last string
}

func (w seenWatched) LastSeen(node string) (time.Time, bool, bool) {
	if node == w.last {
		return time.Time{}, true, true
	}
	return w.seen, false, true
}

// TestNodeGauges: per node, a health series per state, 1 for the state the
// status projection says and 0 for the others; the last apply's time; the
// last seen time and unreachable from the controller's liveness (a node
// never heard has no last seen); and build_info names the version and Go's.
func TestNodeGauges(t *testing.T) {
	ctx := context.Background()
	m := metrics.NewControllerMetrics(nil)
	m.SetVersion("v0.20.0-test")
	store := memstore.New()
	defer store.Close()
	mesh := sim.New(store)
	if err := mesh.Generate(ctx, smallWorkload, 60); err != nil {
		t.Fatal(err)
	}
	if err := mesh.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := mesh.Views.Status.Nodes()
	if len(nodes) < 2 {
		t.Fatalf("%d nodes: the test checks too little", len(nodes))
	}
	seen := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	last := nodes[len(nodes)-1]
	m.Watch(seenWatched{watched{mesh}, seen, last}, store)

	var health, applied, seenB, unreach strings.Builder
	health.WriteString("# HELP meshplane_node_health 1 for the node's health now (churning, failing, waiting-on-take, converged), 0 for each other state.\n# TYPE meshplane_node_health gauge\n")
	applied.WriteString("# HELP meshplane_node_last_apply_timestamp_seconds When the node's last recorded apply was made (the agent's clock), in seconds since the epoch.\n# TYPE meshplane_node_last_apply_timestamp_seconds gauge\n")
	seenB.WriteString("# HELP meshplane_node_last_seen_timestamp_seconds The node's last heartbeat the controller heard (the controller's clock), in seconds since the epoch.\n# TYPE meshplane_node_last_seen_timestamp_seconds gauge\n")
	unreach.WriteString("# HELP meshplane_node_unreachable 1 when the node's agent was not heard within the controller's bound (mesh up --silent-after).\n# TYPE meshplane_node_unreachable gauge\n")
	states := map[string]int{}
	for _, n := range slices.Sorted(slices.Values(nodes)) {
		st, err := mesh.Views.Status.Of(n)
		if err != nil {
			t.Fatal(err)
		}
		states[st.Health]++
		for _, h := range slices.Sorted(slices.Values(metrics.HealthStates)) {
			v := 0
			if h == st.Health {
				v = 1
			}
			fmt.Fprintf(&health, "meshplane_node_health{health=%q,node=%q} %d\n", h, n, v)
		}
		if st.Applied != nil {
			fmt.Fprintf(&applied, "meshplane_node_last_apply_timestamp_seconds{node=%q} %d\n", n, st.Applied.At.Unix())
		}
		u := 0
		if n == last {
			u = 1
		} else {
			fmt.Fprintf(&seenB, "meshplane_node_last_seen_timestamp_seconds{node=%q} %d\n", n, seen.Unix())
		}
		fmt.Fprintf(&unreach, "meshplane_node_unreachable{node=%q} %d\n", n, u)
	}
	if len(states) < 2 {
		t.Fatalf("every node %v: the test checks too little", states)
	}
	reg := m.Registry()
	for name, want := range map[string]string{
		"meshplane_node_health": health.String(), "meshplane_node_last_apply_timestamp_seconds": applied.String(),
		"meshplane_node_last_seen_timestamp_seconds": seenB.String(), "meshplane_node_unreachable": unreach.String(),
		"meshplane_build_info": fmt.Sprintf("# HELP meshplane_build_info 1, labelled with the build: meshplane's version and the Go version it was built with.\n# TYPE meshplane_build_info gauge\nmeshplane_build_info{goversion=%q,version=\"v0.20.0-test\"} 1\n", runtime.Version()),
	} {
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
