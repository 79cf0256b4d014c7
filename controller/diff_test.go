package controller_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// TestDiffAcrossARedefinition: forge v1 runs build A; then v2 is defined,
// build B recorded and deployed, and a pass applies it. The diff from the
// moment between (by position, and by its time alike) says forge was
// redefined in its env, built and deployed, and novox's declaration moved
// with forge's container changed in its image and its env, worded as why
// words them. A diff to the same moment is empty; backwards, or past the
// head, is refused.
func TestDiffAcrossARedefinition(t *testing.T) {
	ctx := context.Background()
	m := sim.New(memstore.New())
	if _, err := m.AddNode(ctx, "novox"); err != nil {
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
	do(commands.SetNodeSetting{Node: "novox", Key: events.SettingArtifactStore, Value: "5000"})
	do(commands.DefineModule{Module: "forge", Spec: forgeSpec("1")})
	do(commands.AssignModule{Module: "forge", Node: "novox"})
	do(commands.RecordArtifact{Module: "forge", Name: "forge/web", Digest: buildA})
	pass()
	from, err := m.Store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	do(commands.DefineModule{Module: "forge", Spec: forgeSpec("2")})
	do(commands.RecordArtifact{Module: "forge", Name: "forge/web", Digest: buildB})
	do(commands.DeployModule{Module: "forge"})
	pass()

	for _, moment := range []string{fmt.Sprint(from), lastAt(t, m, from)} {
		d, err := m.Controller.Diff(ctx, api.DiffRequest{From: moment})
		if err != nil {
			t.Fatalf("diff --from %s: %v", moment, err)
		}
		if d.From.Position != from || d.To.Position <= from || d.Events != int(d.To.Position-from) {
			t.Errorf("diff --from %s: from %+v to %+v, %d events", moment, d.From, d.To, d.Events)
		}
		if len(d.Modules) != 1 || d.Modules[0].Module != "forge" {
			t.Fatalf("modules %+v", d.Modules)
		}
		f := d.Modules[0]
		if len(f.Definitions) != 1 || f.Definitions[0].New || !reflect.DeepEqual(f.Definitions[0].Fields, []string{"containers[web].env"}) {
			t.Errorf("definitions %+v", f.Definitions)
		}
		if len(f.Builds) != 1 || f.Builds[0].Digest != buildB || len(f.Deploys) != 1 || f.Deploys[0].Builds[0].Digest != buildB {
			t.Errorf("builds %+v deploys %+v", f.Builds, f.Deploys)
		}
		if len(d.Nodes) != 1 || d.Nodes[0].Node != "novox" {
			t.Fatalf("nodes %+v", d.Nodes)
		}
		n := d.Nodes[0]
		if n.Declaration == nil || n.Declaration.From == n.Declaration.To || n.Composed != 1 {
			t.Errorf("declaration %+v, %d composed", n.Declaration, n.Composed)
		}
		i := slices.IndexFunc(n.ResourcesChanged, func(r api.ResourceChange) bool { return r.Name == "web" })
		if i < 0 {
			t.Fatalf("web not changed: %+v", n.ResourcesChanged)
		}
		var fields []string
		for _, c := range n.ResourcesChanged[i].Changes {
			fields = append(fields, c.Field)
		}
		if !slices.Contains(fields, "image") || !slices.Contains(fields, "env.VERSION") {
			t.Errorf("web's changes %+v, want its image and env.VERSION", n.ResourcesChanged[i].Changes)
		}
	}

	head, _ := m.Store.Head(ctx)
	if d, err := m.Controller.Diff(ctx, api.DiffRequest{From: fmt.Sprint(head), To: fmt.Sprint(head)}); err != nil || len(d.Nodes)+len(d.Modules)+d.Events != 0 {
		t.Errorf("diff of the head with itself: %+v, %v", d, err)
	}
	for _, req := range []api.DiffRequest{
		{From: fmt.Sprint(from + 1), To: fmt.Sprint(from)},
		{From: fmt.Sprint(head + 1)},
		{From: "1", To: fmt.Sprint(head + 1)},
		{From: "yesterday"},
		{},
	} {
		_, err := m.Controller.Diff(ctx, req)
		if !errors.Is(err, commands.ErrRejected) {
			t.Errorf("diff %+v: %v, want a rejection", req, err)
		}
	}
}

// TestPositionAt: a time stands for the last event at or before it.
func TestPositionAt(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	reg := events.NewRegistry()
	for i := range 5 { // events at t0, t0+1m, ..., t0+4m
		ev, err := reg.New(events.NodeStream("n"), events.NodeSettingSet{Node: "n", Key: "port.p", Value: fmt.Sprint(i)}, events.Meta{ID: uuid.Must(uuid.NewV7()), At: t0.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		at   time.Time
		want uint64
	}{
		{t0.Add(-time.Second), 0},
		{t0, 1},
		{t0.Add(90 * time.Second), 2},
		{t0.Add(2 * time.Minute), 3},
		{t0.Add(time.Hour), 5},
	} {
		got, err := controller.PositionAt(ctx, store, commands.Moment{At: tc.at}, 5)
		if err != nil || got != tc.want {
			t.Errorf("PositionAt(%s) = %d, %v; want %d", tc.at.Format(time.RFC3339), got, err, tc.want)
		}
	}
	if got, err := controller.PositionAt(ctx, store, commands.Moment{Position: 3}, 5); err != nil || got != 3 {
		t.Errorf("a position stands for itself: %d, %v", got, err)
	}
}
