package controller_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// verdictMesh is a sim mesh whose module web has containers containers
// and files files.
func verdictMesh(t *testing.T, containers, files int) (*sim.Mesh, func(commands.Command)) {
	t.Helper()
	m := sim.New(memstore.New())
	do := func(c commands.Command) {
		t.Helper()
		if err := m.Do(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	s := events.ModuleSpec{}
	for i := range containers {
		s.Containers = append(s.Containers, events.ContainerSpec{Name: fmt.Sprintf("web-%d", i), Image: "registry.example/web:1"})
	}
	for i := range files {
		s.Files = append(s.Files, events.FileSpec{Path: fmt.Sprintf("/etc/web/%d.conf", i), Content: "x"})
	}
	do(commands.DefineModule{Module: "web", Spec: s})
	return m, do
}

func planOf(t *testing.T, m *sim.Mesh, node string) api.NodePlan {
	t.Helper()
	ctx := context.Background()
	if err := m.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	np, err := controller.PlanNode(ctx, controller.Planning{
		Reader: m.Handler, Store: m.Store, Registry: m.Registry, DryRun: m, Status: m.Views.Status,
	}, node)
	if err != nil {
		t.Fatal(err)
	}
	return np
}

// TestPlanVerdict: rule 7 is about churn on a running node. A first
// deploy (the node has had no resource applied) is not heavy, asked of
// the agent or planned from the declarations; a resource the node's last
// apply failed, created now, is a retry and counted by neither clause;
// the same creations on a node that ran them are heavy.
func TestPlanVerdict(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		containers int
		files      int
		failFirst  bool // the first apply fails to create one container
		applied    bool // a first apply ran (and succeeded, unless failFirst)
		removeAll  bool // then every container was removed from outside
		askAgent   bool
		wantHeavy  bool
	}{
		{name: "first deploy, the agent asked", containers: 3, files: 1, askAgent: true},
		{name: "first deploy, from the declarations", containers: 3, files: 1},
		{name: "retry of the one container", containers: 1, files: 1, failFirst: true, applied: true, askAgent: true},
		{name: "every container gone from a running node", containers: 3, files: 1, applied: true, removeAll: true, askAgent: true, wantHeavy: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, do := verdictMesh(t, c.containers, c.files)
			nd, err := m.AddNode(ctx, "novox")
			if err != nil {
				t.Fatal(err)
			}
			do(commands.AssignModule{Module: "web", Node: "novox"})
			if c.applied {
				if c.failFirst {
					nd.Runtime.FailNext("create", 1, errors.New("image unavailable"))
				}
				if _, _, err := m.Pass(ctx, "novox"); err != nil {
					t.Fatal(err)
				}
			}
			if c.removeAll {
				nd.Runtime.RemoveAllContainers()
			}
			var np api.NodePlan
			if c.askAgent {
				np = planOf(t, m, "novox")
			} else {
				if err := m.CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
				np, err = controller.PlanNode(ctx, controller.Planning{
					Reader: m.Handler, Store: m.Store, Registry: m.Registry, NoDryRun: "not asked", Status: m.Views.Status,
				}, "novox")
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(np.Outcome.Created) == 0 {
				t.Fatalf("the plan creates nothing: %s", np.Headline)
			}
			if np.Heavy != c.wantHeavy {
				t.Errorf("heavy %v, want %v: %s", np.Heavy, c.wantHeavy, np.Headline)
			}
		})
	}
}

// TestPlanHeavyOfSeveralNodes: a plan of several nodes is heavy when any
// node's is, whatever the order: node a heavy and b not is heavy.
func TestPlanHeavyOfSeveralNodes(t *testing.T) {
	ctx := context.Background()
	m, do := verdictMesh(t, 2, 0)
	for _, n := range []string{"a", "b"} {
		if _, err := m.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		do(commands.AssignModule{Module: "web", Node: n})
	}
	for _, n := range []string{"a", "b"} {
		if _, _, err := m.Pass(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// a's containers are gone: both would be created again (heavy); b
	// runs its own: nothing to do.
	na, err := m.Node("a")
	if err != nil {
		t.Fatal(err)
	}
	na.Runtime.RemoveAllContainers()
	if err := m.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for _, nodes := range [][]string{{"a", "b"}, {"b", "a"}} {
		plan, err := m.Controller.Plan(ctx, api.PlanRequest{Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Nodes) != 2 || !plan.Nodes[indexOf(nodes, "a")].Heavy || plan.Nodes[indexOf(nodes, "b")].Heavy {
			t.Fatalf("plan of %v: want a heavy and b not: %+v", nodes, plan.Nodes)
		}
		if !plan.Heavy {
			t.Errorf("plan of %v: a is heavy and the plan is not", nodes)
		}
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// TestPlanFromDeclarationsSameRoster: right after a pass (mesh up --once),
// a node planned from its last applied declaration (no agent asked) has
// nothing to do, its hosts file included: the compose stored its roster by
// revision, and the plan reads the names back from the roster's stream.
// A roster that changed since is a hosts file to update.
func TestPlanFromDeclarationsSameRoster(t *testing.T) {
	ctx := context.Background()
	m, do := verdictMesh(t, 2, 1)
	if _, err := m.AddNode(ctx, "novox"); err != nil {
		t.Fatal(err)
	}
	do(commands.SetNodeSetting{Node: "novox", Key: events.SettingPrivateAddress, Value: "10.0.0.2"})
	do(commands.DefineModule{Module: "web", Spec: events.ModuleSpec{Routes: []string{"web.mesh.example"},
		Containers: []events.ContainerSpec{{Name: "web-0", Image: "registry.example/web:1"}}}})
	do(commands.AssignModule{Module: "web", Node: "novox"})
	if _, _, err := m.Pass(ctx, "novox"); err != nil {
		t.Fatal(err)
	}
	plan := func() api.NodePlan {
		t.Helper()
		if err := m.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		np, err := controller.PlanNode(ctx, controller.Planning{
			Reader: m.Handler, Store: m.Store, Registry: m.Registry, NoDryRun: "not asked", Status: m.Views.Status,
		}, "novox")
		if err != nil {
			t.Fatal(err)
		}
		if np.Source != api.PlanByDeclarations {
			t.Fatalf("planned by %s", np.Source)
		}
		return np
	}
	if np := plan(); np.Hosts != "" || len(np.Steps) != 0 {
		t.Errorf("the same declaration again: hosts %q, %d step(s): %s", np.Hosts, len(np.Steps), np.Headline)
	}
	do(commands.DefineModule{Module: "web", Spec: events.ModuleSpec{Routes: []string{"web.mesh.example", "www.mesh.example"},
		Containers: []events.ContainerSpec{{Name: "web-0", Image: "registry.example/web:1"}}}})
	if np := plan(); np.Hosts == "" {
		t.Errorf("a new name on the roster: no hosts file to update: %s", np.Headline)
	}
}
