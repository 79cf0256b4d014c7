package controller_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
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

// TestParseAfter: each --after command reads as the command it names; a
// module define takes its files from those sent, refusing one not sent.
func TestParseAfter(t *testing.T) {
	files := map[string]api.ModuleDefinition{"hello.yaml": {Module: "hello"}, "b.yaml": {Module: "b"}}
	tests := []struct {
		line string
		want []commands.Command
		err  string
	}{
		{"deploy forge --digest sha256:aa", []commands.Command{commands.DeployModule{Module: "forge", Digest: "sha256:aa"}}, ""},
		{"release forge novox", []commands.Command{commands.ReleaseModule{Module: "forge", Node: "novox"}}, ""},
		{"node set novox port.store 3001", []commands.Command{commands.SetNodeSetting{Node: "novox", Key: "port.store", Value: "3001"}}, ""},
		{"node set novox port.store", []commands.Command{commands.SetNodeSetting{Node: "novox", Key: "port.store"}}, ""},
		{"module define hello.yaml b.yaml", []commands.Command{commands.DefineModule{Module: "hello"}, commands.DefineModule{Module: "b"}}, ""},
		{"module define other.yaml", nil, "other.yaml was not sent"},
		{"revert forge --to 41", []commands.Command{commands.RevertModule{Module: "forge", To: commands.Moment{Position: 41}}}, ""},
		{"revert forge --to=2026-09-29T22:46:00Z", []commands.Command{commands.RevertModule{Module: "forge", To: commands.Moment{At: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)}}}, ""},
		{"revert forge --to yesterday", nil, "RFC 3339"},
		{"revert forge", nil, "want a command"},
		{"node set novox", nil, "want a command"},
		{"destroy forge", nil, "want a command"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, err := controller.ParseAfter([]string{tt.line}, files, nil)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseAfter = %v, %v; want an error naming %q", got, err, tt.err)
				}
				if controller.CheckAfter(tt.line) == nil && (tt.err == "want a command" || tt.err == "RFC 3339") {
					t.Errorf("CheckAfter lets %q by", tt.line)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseAfter = %#v, %v; want %#v", got, err, tt.want)
			}
			if err := controller.CheckAfter(tt.line); err != nil {
				t.Errorf("CheckAfter(%q) = %v", tt.line, err)
			}
		})
	}
}

// TestPlanAfterAnEdit: --after "module define FILE" and "node set" plan
// the edit before it is made, appending nothing; Reached plans only the
// nodes the edit reaches.
func TestPlanAfterAnEdit(t *testing.T) {
	h := start(t)
	helloOn(t, h)
	if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	head := h.head(t)
	edit := helloDef("bonjour", "/srv/forge").Modules[0]
	resp, err := h.ctrl.Plan(h.ctx, api.PlanRequest{After: []string{"module define hello.yaml"}, Files: map[string]api.ModuleDefinition{"hello.yaml": edit}, Reached: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Nodes) != 1 || resp.Nodes[0].Node != "a" {
		t.Fatalf("the edit's plan covers %+v, want a only (b has no hello)", resp.Nodes)
	}
	var changes []api.Change
	for _, s := range resp.Nodes[0].Steps {
		if s.Action == "replace" {
			changes = append(changes, s.Changes...)
		}
	}
	want := []api.Change{{Field: "env.GREETING", From: "hello", To: "bonjour"}, {Field: "mounts./data", From: "/var/lib/forge", To: "/srv/forge"}}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("the edit's plan replaces with %+v, want %+v", changes, want)
	}
	if _, err := h.ctrl.Plan(h.ctx, api.PlanRequest{Nodes: []string{"a"}, After: []string{"node set a port.store 3001"}}); err != nil {
		t.Errorf("plan --after node set: %v", err)
	}
	if got := h.head(t); got != head {
		t.Errorf("planning appended: head %d → %d", head, got)
	}
}
