package controller_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
)

// TestDayOneVerbs: the lists and module show say what the mesh holds; a
// module is removed only once released everywhere (--release does it in
// the same request), a node only once drained (its modules released and
// the emptied declaration pushed), and each removal is its event; a
// removed name is gone from every list and comes back as new.
func TestDayOneVerbs(t *testing.T) {
	h := start(t)
	c := h.ctrl
	op := "tester"
	must := func(_ api.CommandResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	refused := func(err error, code, msg string) {
		t.Helper()
		var r *commands.Rejection
		if !errors.As(err, &r) || r.Code != code || !strings.Contains(r.Msg, msg) {
			t.Fatalf("err %v, want a rejection %s naming %q", err, code, msg)
		}
	}
	must(c.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a", "b"}}))
	must(c.AdoptNode(h.ctx, api.NodeRequest{Operator: op, Node: "b"}))
	forge := mod("forge")
	forge.Spec.Containers[0].Image, forge.Spec.Containers[0].Artifact = "", "forge/web"
	must(c.DefineModules(h.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{forge, mod("apps")}}))
	must(c.RecordArtifact(h.ctx, api.RecordArtifactRequest{Operator: op, Module: "forge", Name: "forge/web", Digest: "sha256:" + strings.Repeat("1", 64)}))
	must(c.RecordArtifact(h.ctx, api.RecordArtifactRequest{Operator: op, Module: "forge", Name: "forge/web", Digest: "sha256:" + strings.Repeat("2", 64)}))
	for _, n := range []string{"a", "b"} {
		must(c.Assign(h.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: n}))
	}
	must(c.Assign(h.ctx, api.ModuleNodeRequest{Operator: op, Module: "apps", Node: "a"}))
	must(c.Take(h.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "b"}))

	nl, err := c.NodeList(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nl.Nodes) != 2 || nl.Nodes[0].Node != "a" || !slices.Equal(nl.Nodes[0].Modules, []string{"apps", "forge"}) || !nl.Nodes[1].Adopted || nl.Nodes[0].Health == "" {
		t.Errorf("node list: %+v", nl)
	}
	ml, err := c.ModuleList(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Modules) != 2 || ml.Modules[1].Module != "forge" || !slices.Equal(ml.Modules[1].Nodes, []string{"a", "b"}) || ml.Modules[1].Builds != 2 || ml.Modules[1].Upgrade != events.UpgradeManual {
		t.Errorf("module list: %+v", ml)
	}
	ms, err := c.ModuleShow(h.ctx, "forge")
	if err != nil {
		t.Fatal(err)
	}
	wantBuilds := []api.BuildView{
		{Name: "forge/web", Digest: "sha256:" + strings.Repeat("1", 64), Deployed: true}, // the first build deploys itself
		{Name: "forge/web", Digest: "sha256:" + strings.Repeat("2", 64), Latest: true},   // manual: waits for a deploy
	}
	if !slices.Equal(ms.Builds, wantBuilds) || !slices.Equal(ms.Nodes, []api.ModuleNode{{Node: "a"}, {Node: "b", Taken: true}}) || ms.Spec.Containers[0].Artifact != "forge/web" {
		t.Errorf("module show: %+v", ms)
	}
	_, err = c.ModuleShow(h.ctx, "nosuch")
	refused(err, commands.CodeModuleUnknown, "not defined")

	// A module assigned is not removed; --release releases it first.
	_, err = c.RemoveModule(h.ctx, api.RemoveModuleRequest{Operator: op, Module: "forge"})
	refused(err, commands.CodeModuleAssigned, "assigned to a, b")
	head := h.head(t)
	_, err = c.RemoveModule(h.ctx, api.RemoveModuleRequest{Operator: op, Module: "nosuch", Release: true})
	refused(err, commands.CodeModuleUnknown, "nosuch")
	if h.head(t) != head {
		t.Error("a refused removal appended")
	}
	res, err := c.RemoveModule(h.ctx, api.RemoveModuleRequest{Operator: op, Module: "forge", Release: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := typesOf(res); !slices.Equal(got, []string{events.TypeModuleReleased, events.TypeModuleReleased, events.TypeModuleRemoved}) {
		t.Errorf("remove --release appended %v", got)
	}
	if d := h.bus.latest("b"); len(d.Resources) != 0 {
		t.Errorf("b's declaration after forge left: %d resources, want none", len(d.Resources))
	}
	if _, err := c.ModuleShow(h.ctx, "forge"); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Errorf("module show of a removed module: %v", err)
	}
	if ml, _ := c.ModuleList(h.ctx); len(ml.Modules) != 1 {
		t.Errorf("module list after the removal: %+v", ml)
	}
	must(c.DefineModules(h.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{forge}}))
	if ms, _ := c.ModuleShow(h.ctx, "forge"); len(ms.Builds) != 0 || len(ms.Nodes) != 0 {
		t.Errorf("defined again, forge inherits: %+v", ms)
	}

	// A node with modules is not removed; --drain releases them first and
	// pushes the emptied declaration.
	_, err = c.RemoveNode(h.ctx, api.RemoveNodeRequest{Operator: op, Node: "a"})
	refused(err, commands.CodeModulesAssigned, "apps")
	puts := h.bus.counts()["a"]
	res, err = c.RemoveNode(h.ctx, api.RemoveNodeRequest{Operator: op, Node: "a", Drain: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := typesOf(res); !slices.Equal(got, []string{events.TypeModuleReleased, events.TypeNodeRemoved}) {
		t.Errorf("remove --drain appended %v", got)
	}
	if h.bus.counts()["a"] <= puts || len(h.bus.latest("a").Resources) != 0 {
		t.Errorf("the drained declaration was not pushed to a: %d puts before, %d after, %d resources", puts, h.bus.counts()["a"], len(h.bus.latest("a").Resources))
	}
	if nl, _ := c.NodeList(h.ctx); len(nl.Nodes) != 1 || nl.Nodes[0].Node != "b" {
		t.Errorf("node list after the removal: %+v", nl)
	}
	if _, err := c.NodeShow(h.ctx, "a"); err == nil {
		t.Error("node show of a removed node answers")
	}
	if p, err := c.Timeline(h.ctx, api.TimelineRequest{Node: "a", Type: events.TypeNodeRemoved}); err != nil || len(p.Entries) != 1 {
		t.Errorf("the removed node's history: %v, %v", p.Entries, err)
	}
	if ms, _ := c.ModuleList(h.ctx); ms.Modules[0].Module != "apps" || len(ms.Modules[0].Nodes) != 0 {
		t.Errorf("apps after a's drain: %+v", ms.Modules[0])
	}
	must(c.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a"}}))
	st, err := c.NodeShow(h.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Status.Modules) != 0 || st.Status.Adopted {
		t.Errorf("registered again, a inherits: %+v", st.Status)
	}
}

func typesOf(res api.CommandResult) []string {
	var out []string
	for _, a := range res.Results {
		for _, e := range a.Events {
			out = append(out, e.Type)
		}
	}
	return out
}
