package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/metrics"
	"meshplane/sim"
)

// TestComposeAxis: a node whose latest compose failed (two modules claim
// one container name) reads 1 in meshplane_node_compose_failed, after its
// agent re-applied the older declaration too, and counts the clashing
// module pending; a node never composed counts its module pending and no
// failure. Once the clash is released, a compose succeeds and it reads 0.
func TestComposeAxis(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	mesh := sim.New(store)
	for _, n := range []string{"opx", "quiet"} {
		if _, err := mesh.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	do := func(cs ...commands.Command) {
		t.Helper()
		for _, c := range cs {
			if err := mesh.Do(ctx, c); err != nil {
				t.Fatalf("%T: %v", c, err)
			}
		}
	}
	do(commands.DefineModule{Module: "opxweb", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "scenario.invalid/opxweb:1"}}}},
		commands.DefineModule{Module: "opxtypo2", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "scenario.invalid/opxtypo2:1"}}}},
		commands.AssignModule{Module: "opxweb", Node: "opx"}, commands.AssignModule{Module: "opxweb", Node: "quiet"})
	if _, _, err := mesh.Pass(ctx, "opx"); err != nil {
		t.Fatal(err)
	}
	do(commands.AssignModule{Module: "opxtypo2", Node: "opx"})
	if _, _, err := mesh.Pass(ctx, "opx"); err != nil { // the compose fails; the agent applies its older declaration
		t.Fatal(err)
	}
	m := metrics.NewControllerMetrics(func() time.Time { return sim.Epoch })
	check := func(want string) {
		t.Helper()
		if err := mesh.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		m.Watch(watched{mesh}, store)
		if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
			"meshplane_node_compose_failed", "meshplane_node_modules_pending"); err != nil {
			t.Error(err)
		}
	}
	head := `# HELP meshplane_node_compose_failed 1 when the node's latest compose failed (it is failing until a compose succeeds, whatever its agent re-applies), else 0.
# TYPE meshplane_node_compose_failed gauge
`
	pendingHead := `# HELP meshplane_node_modules_pending Modules assigned to the node and absent from its applied declaration (not composed, or not applied yet).
# TYPE meshplane_node_modules_pending gauge
`
	check(head + `meshplane_node_compose_failed{node="opx"} 1
meshplane_node_compose_failed{node="quiet"} 0
` + pendingHead + `meshplane_node_modules_pending{node="opx"} 1
meshplane_node_modules_pending{node="quiet"} 1
`)
	do(commands.ReleaseModule{Module: "opxtypo2", Node: "opx"})
	if _, _, err := mesh.Pass(ctx, "opx"); err != nil {
		t.Fatal(err)
	}
	check(head + `meshplane_node_compose_failed{node="opx"} 0
meshplane_node_compose_failed{node="quiet"} 0
` + pendingHead + `meshplane_node_modules_pending{node="opx"} 0
meshplane_node_modules_pending{node="quiet"} 1
`)
}
