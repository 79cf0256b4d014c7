package controller_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
)

// TestWhyTellsTheWholeChange: a container replaced after its module's
// definition changed names each field with its old and new value, and the
// module.defined behind it with its actor and time.
func TestWhyTellsTheWholeChange(t *testing.T) {
	h := start(t)
	def := func(greeting, source string) api.DefineModulesRequest {
		return api.DefineModulesRequest{Operator: "ana", Modules: []api.ModuleDefinition{{Module: "hello", Spec: events.ModuleSpec{
			Containers: []events.ContainerSpec{{Name: "web", Image: "registry.example/hello:1",
				Env: map[string]string{"GREETING": greeting}, Mounts: []events.Mount{{Source: source, Target: "/data"}}}},
		}}}}
	}
	report := func(d declaration.Declaration, a events.ApplyReported) {
		t.Helper()
		a.Node, a.Declaration, a.Digest, a.Sent, a.Applied = "a", d.ID, d.Digest, len(d.Resources), len(d.Resources)
		a.Unchanged = a.Sent - len(a.Created) - len(a.Replaced)
		if _, err := h.ctrl.RecordReport(h.ctx, commands.Delivery{Report: a, ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Now(), Correlation: d.Correlation}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.DefineModules(h.ctx, def("hello", "/var/lib/forge")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.Assign(h.ctx, api.ModuleNodeRequest{Operator: "x", Module: "hello", Node: "a"}); err != nil {
		t.Fatal(err)
	}
	first := h.bus.latest("a")
	name := ""
	for _, r := range first.Resources {
		if r.Kind == declaration.KindContainer {
			name = r.Name
		}
	}
	report(first, events.ApplyReported{Created: []string{name}})
	if _, err := h.ctrl.DefineModules(h.ctx, def("bonjour", "/srv/forge")); err != nil {
		t.Fatal(err)
	}
	next := h.bus.latest("a")
	if next.ID == first.ID {
		t.Fatalf("the second definition pushed nothing new (%s)", next.ID)
	}
	report(next, events.ApplyReported{Replaced: []events.Replaced{{Name: name, Fields: []string{"env.GREETING", "mounts./data"}}}})

	resp, err := h.ctrl.Why(h.ctx, api.WhyRequest{Node: "a", Resource: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Touches) != 2 {
		t.Fatalf("why %s: %d touches, want created and replaced: %+v", name, len(resp.Touches), resp.Touches)
	}
	created, replaced := resp.Touches[0], resp.Touches[1]
	if created.Changes != nil {
		t.Errorf("a create names changes: %+v", created.Changes)
	}
	want := []api.Change{{Field: "env.GREETING", From: "hello", To: "bonjour"}, {Field: "mounts./data", From: "/var/lib/forge", To: "/srv/forge"}}
	if !reflect.DeepEqual(replaced.Changes, want) {
		t.Errorf("the replace's changes: %+v, want %+v", replaced.Changes, want)
	}
	var defined []api.Entry
	for _, en := range replaced.Commands {
		if en.Type == events.TypeModuleDefined {
			defined = append(defined, en)
		}
	}
	if len(defined) != 1 || defined[0].Actor != "operator:ana" || defined[0].At.IsZero() {
		t.Errorf("the commands behind the replace: %+v, want the second module.defined, by operator:ana, with its time", replaced.Commands)
	}
	if len(created.Commands) == 0 || created.Commands[0].Type != events.TypeModuleDefined || created.Commands[0].Position >= defined[0].Position {
		t.Errorf("the commands behind the create: %+v, want the first module.defined first", created.Commands)
	}
}
