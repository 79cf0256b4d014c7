package controller_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

const (
	buildA = "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
	buildB = "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"
)

// forgeSpec is forge at version v: one container running its artifact.
func forgeSpec(v string) events.ModuleSpec {
	return events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Artifact: "forge/web", Env: map[string]string{"VERSION": v}}}}
}

// TestRevertRunsAgainWhatRanThen: define v1, deploy build A, define v2,
// deploy build B; a revert to the moment after A is planned (nothing
// appended, the replace shown), then made: the module is v1 running A
// again, by two new events carrying the revert as their cause, every
// earlier event as it was. Again, it changes nothing and says so; a
// moment before forge was defined, or one not reached yet, is refused.
func TestRevertRunsAgainWhatRanThen(t *testing.T) {
	ctx := context.Background()
	m := sim.New(memstore.New())
	nd, err := m.AddNode(ctx, "novox")
	if err != nil {
		t.Fatal(err)
	}
	do := func(c commands.Command) {
		t.Helper()
		if err := m.Do(ctx, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	pass := func() {
		t.Helper()
		if _, ok, err := m.Pass(ctx, "novox"); err != nil || !ok {
			t.Fatalf("pass: %v (applied %v)", err, ok)
		}
	}
	head := func() uint64 {
		t.Helper()
		h, err := m.Store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	do(commands.SetNodeSetting{Node: "novox", Key: events.SettingArtifactStore, Value: "5000"})
	beforeForge := head()
	do(commands.DefineModule{Module: "forge", Spec: forgeSpec("1")})
	do(commands.AssignModule{Module: "forge", Node: "novox"})
	do(commands.RecordArtifact{Module: "forge", Name: "forge/web", Digest: buildA}) // the first build deploys itself
	pass()
	afterA := head()
	afterAAt := lastAt(t, m, afterA)
	do(commands.DefineModule{Module: "forge", Spec: forgeSpec("2")})
	do(commands.RecordArtifact{Module: "forge", Name: "forge/web", Digest: buildB})
	do(commands.DeployModule{Module: "forge"})
	pass()
	if got := image(t, nd); !strings.HasSuffix(got, buildB) {
		t.Fatalf("before the revert web runs %s", got)
	}
	history, err := m.Store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	to := fmt.Sprint(afterA)

	// Planned first: nothing appended, web replaced for its image and env.
	plan, err := m.Controller.Plan(ctx, api.PlanRequest{After: []string{"revert forge --to " + to}})
	if err != nil {
		t.Fatal(err)
	}
	if h := head(); h != history[len(history)-1].Position {
		t.Fatalf("the plan appended: head %d, was %d", h, history[len(history)-1].Position)
	}
	if len(plan.Nodes) != 1 || !replaces(plan.Nodes[0], "web", "image") || !replaces(plan.Nodes[0], "web", "env") {
		t.Fatalf("the plan does not replace web for its image and env: %+v", plan.Nodes)
	}

	res, err := m.Controller.Revert(ctx, api.RevertRequest{Operator: "ana", Module: "forge", To: to})
	if err != nil {
		t.Fatal(err)
	}
	if res.Position == 0 || res.Position > afterA || res.To != to || !reflect.DeepEqual(res.Builds, []events.Build{{Name: "forge/web", Digest: buildA}}) || len(res.Events) != 2 {
		t.Fatalf("result %+v", res)
	}
	// The module is v1 running A again.
	mod, err := m.Handler.Module(ctx, "forge")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(mod.Spec, forgeSpec("1")) || mod.Deployed["forge/web"] != buildA {
		t.Errorf("after the revert forge is %+v running %v", mod.Spec, mod.Deployed)
	}
	pass()
	if got := image(t, nd); !strings.HasSuffix(got, buildA) {
		t.Errorf("after the revert web runs %s", got)
	}
	// The new events: on forge's stream, one correlation, the revert's
	// cause, the operator, a deploy by revert.
	all, err := m.Store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var added []events.Event
	for _, ev := range all[len(history):] {
		if ev.Stream == "module-forge" {
			added = append(added, ev)
		}
	}
	if len(added) != 2 || added[0].Type != events.TypeModuleDefined || added[1].Type != events.TypeModuleDeployed {
		t.Fatalf("appended to module-forge: %v", added)
	}
	for _, ev := range added {
		if ev.Causation != "revert forge --to "+to || ev.Correlation != added[0].Correlation || ev.Correlation == "" || ev.Actor != "operator:ana" {
			t.Errorf("%s: causation %q correlation %q actor %q", ev, ev.Causation, ev.Correlation, ev.Actor)
		}
	}
	dep, err := events.DecodeAs[events.ModuleDeployed](m.Registry, added[1])
	if err != nil || dep.By != events.DeployedByRevert {
		t.Errorf("module.deployed by %q (%v)", dep.By, err)
	}
	// History untouched: every earlier event as it was stored.
	for i, ev := range history {
		if !reflect.DeepEqual(ev, all[i]) {
			t.Fatalf("event at %d changed:\n%+v\n%+v", ev.Position, ev, all[i])
		}
	}

	// Again, by time: the module is already so; nothing appended.
	h := head()
	again, err := m.Controller.Revert(ctx, api.RevertRequest{Operator: "ana", Module: "forge", To: afterAAt})
	if err != nil || len(again.Events) != 0 || head() != h || again.SpecDigest != res.SpecDigest {
		t.Errorf("a revert that changes nothing: %+v, %v; head %d, was %d", again, err, head(), h)
	}

	// Refused: before forge was defined (naming when it was), a moment not
	// reached yet, and a moment that does not parse.
	for _, c := range []struct{ to, code, says string }{
		{fmt.Sprint(beforeForge), commands.CodeModuleUnknown, "not defined yet then (first defined at position"},
		{fmt.Sprint(h + 100), commands.CodeInvalid, "past the store's last event"},
		{"2999-01-01T00:00:00Z", commands.CodeInvalid, "after now"},
		{"yesterday", commands.CodeInvalid, "RFC 3339"},
	} {
		_, err := m.Controller.Revert(ctx, api.RevertRequest{Operator: "ana", Module: "forge", To: c.to})
		var rej *commands.Rejection
		if !errors.As(err, &rej) || rej.Code != c.code || !strings.Contains(rej.Msg, c.says) {
			t.Errorf("--to %s: %v, want %s naming %q", c.to, err, c.code, c.says)
		}
		if head() != h {
			t.Errorf("--to %s appended", c.to)
		}
	}
	if _, err := m.Controller.Plan(ctx, api.PlanRequest{After: []string{"revert forge --to " + fmt.Sprint(beforeForge)}}); err == nil {
		t.Error("a plan after a revert to before forge was defined is no refusal")
	}
}

// lastAt is the time of the event at position p, in RFC 3339.
func lastAt(t *testing.T, m *sim.Mesh, p uint64) string {
	t.Helper()
	evs, err := m.Store.ReadAll(context.Background(), p-1, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("event at %d: %v", p, err)
	}
	return evs[0].At.Format("2006-01-02T15:04:05.999999999Z07:00")
}

// image is the image web runs on nd.
func image(t *testing.T, nd *sim.Node) string {
	t.Helper()
	c, ok := nd.Runtime.Container("web")
	if !ok {
		t.Fatalf("no container web on %s: %v", nd.Name, nd.Runtime.Names())
	}
	return c.Image
}

// replaces reports whether np replaces name, naming field among its
// changed fields.
func replaces(np api.NodePlan, name, field string) bool {
	for _, s := range np.Steps {
		if s.Name == name && s.Action == "replace" && slices.ContainsFunc(s.Fields, func(f string) bool { return strings.Contains(f, field) }) {
			return true
		}
	}
	return false
}
