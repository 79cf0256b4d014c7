package controller_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
)

// helloDef is module hello with one container, its env and mount as given.
func helloDef(greeting, source string) api.DefineModulesRequest {
	return api.DefineModulesRequest{Operator: "ana", Modules: []api.ModuleDefinition{{Module: "hello", Spec: events.ModuleSpec{
		Containers: []events.ContainerSpec{{Name: "web", Image: "registry.example/hello:1",
			Env: map[string]string{"GREETING": greeting}, Mounts: []events.Mount{{Source: source, Target: "/data"}}}},
	}}}}
}

// helloOn registers node a, defines hello and assigns it there, and
// records a's report of creating everything pushed: the declaration.
func helloOn(t *testing.T, h *harness) declaration.Declaration {
	t.Helper()
	if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.DefineModules(h.ctx, helloDef("hello", "/var/lib/forge")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.Assign(h.ctx, api.ModuleNodeRequest{Operator: "x", Module: "hello", Node: "a"}); err != nil {
		t.Fatal(err)
	}
	d := h.bus.latest("a")
	a := events.ApplyReported{Node: "a", Declaration: d.ID, Digest: d.Digest, Sent: len(d.Resources), Applied: len(d.Resources)}
	for _, r := range d.Resources {
		a.Created = append(a.Created, r.Name)
	}
	if _, err := h.ctrl.RecordReport(h.ctx, commands.Delivery{Report: a, ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Now(), Correlation: d.Correlation}); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPlanAgainstTheLastApplied: a plan that cannot ask the agent diffs
// against the declaration the node last applied, not the one last pushed,
// and names the push not applied yet: after an edit pushed and not yet
// applied it plans the replace the agent will make (it said "nothing
// changes").
func TestPlanAgainstTheLastApplied(t *testing.T) {
	h := start(t)
	first := helloOn(t, h)
	if _, err := h.ctrl.DefineModules(h.ctx, helloDef("bonjour", "/var/lib/forge")); err != nil {
		t.Fatal(err)
	}
	next := h.bus.latest("a")
	if next.ID == first.ID {
		t.Fatal("the edit pushed nothing new")
	}
	resp, err := h.ctrl.Plan(h.ctx, api.PlanRequest{Nodes: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	np := resp.Nodes[0]
	if np.Source != api.PlanByDeclarations || np.Against != first.ID || np.Unapplied != next.ID {
		t.Errorf("plan: source %s, against %q, unapplied %q; want %s against %s, %s not applied yet", np.Source, np.Against, np.Unapplied, api.PlanByDeclarations, first.ID, next.ID)
	}
	var replaced []api.PreviewStep
	for _, s := range np.Steps {
		if s.Action == "replace" {
			replaced = append(replaced, s)
		}
	}
	if len(replaced) != 1 || len(replaced[0].Changes) != 1 || replaced[0].Changes[0] != (api.Change{Field: "env.GREETING", From: "hello", To: "bonjour"}) {
		t.Errorf("plan steps %+v, want the container replaced for env.GREETING hello → bonjour (%s)", np.Steps, np.Headline)
	}
}
