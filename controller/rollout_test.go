package controller_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/wire"
)

// TestFailedRolloutReverts: a report that says a module's start-first
// roll-out failed is recorded as rollout.failed; with on_failure: revert
// the controller then defines the module as it was before the roll-out
// (its events caused by the rollout.failed) and pushes it; when that
// revert's own roll-out fails, it stops there; with pause, nothing is
// reverted.
func TestFailedRolloutReverts(t *testing.T) {
	for _, onFailure := range []string{events.UpdateRevert, events.UpdatePause} {
		t.Run(onFailure, func(t *testing.T) {
			h := start(t)
			def := func(img string) api.DefineModulesRequest {
				return api.DefineModulesRequest{Operator: "ana", Modules: []api.ModuleDefinition{{Module: "forge", Spec: events.ModuleSpec{
					Containers: []events.ContainerSpec{{Name: "web", Image: img}},
					Update:     &events.UpdatePolicy{Order: events.UpdateStartFirst, MinHealthyMS: 1000, HealthyDeadlineMS: 60_000, OnFailure: onFailure},
				}}}}
			}
			if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"novox"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ctrl.DefineModules(h.ctx, def("forge:1")); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ctrl.Assign(h.ctx, api.ModuleNodeRequest{Operator: "x", Module: "forge", Node: "novox"}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ctrl.DefineModules(h.ctx, def("forge:2")); err != nil {
				t.Fatal(err)
			}
			failed := func() []events.Event {
				t.Helper()
				d := h.bus.latest("novox")
				rep := events.ApplyReported{Node: "novox", Declaration: d.ID, Digest: d.Digest, Sent: len(d.Resources), Applied: len(d.Resources) - 1,
					Failed: []events.Failed{{Name: "web", Error: "replace web start-first: the new container exited with code 1"}}}
				evs, err := h.ctrl.RecordReport(h.ctx, commands.Delivery{Report: rep, ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Now(), Correlation: d.Correlation,
					Workload: &wire.Workload{Rollouts: []events.RolloutFailure{{Module: "forge", Container: "web", Why: "exited with code 1"}}}})
				if err != nil {
					t.Fatal(err)
				}
				return evs
			}
			image := func() string {
				t.Helper()
				d := h.bus.latest("novox")
				r, ok := d.Resource("web")
				if !ok || r.Kind != declaration.KindContainer {
					t.Fatal("no web in novox's declaration")
				}
				return r.Container.Image
			}
			evs := failed()
			if len(evs) != 2 || evs[1].Type != events.TypeRolloutFailed {
				t.Fatalf("recorded %+v, want apply.reported and rollout.failed", evs)
			}
			mod, err := h.store.ReadStream(h.ctx, events.ModuleStream("forge"), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			last := mod[len(mod)-1]
			if onFailure == events.UpdatePause {
				if image() != "forge:2" || last.Type != events.TypeModuleDefined || last.Causation != "" {
					t.Fatalf("pause reverted: novox runs %s, the module's last event %s caused by %q", image(), last.Type, last.Causation)
				}
				return
			}
			if image() != "forge:1" || last.Causation != commands.RolloutCausePrefix+evs[1].ID.String() {
				t.Fatalf("after the failed roll-out: novox runs %s, the module's last event %s caused by %q; want forge:1, caused by the rollout.failed",
					image(), last.Type, last.Causation)
			}
			// The revert's own roll-out fails: it stops there.
			head := h.head(t)
			evs = failed()
			if len(evs) != 2 {
				t.Fatalf("recorded %+v", evs)
			}
			p, err := events.NewRegistry().Decode(evs[1])
			if err != nil {
				t.Fatal(err)
			}
			if rf := p.(events.RolloutFailed); rf.Action != events.RolloutStopped {
				t.Fatalf("the revert's failed roll-out: action %s, want %s", rf.Action, events.RolloutStopped)
			}
			if h.head(t) != head+2 || image() != "forge:1" {
				t.Fatalf("after the revert failed: head %d → %d, novox runs %s; want nothing more appended", head, h.head(t), image())
			}
		})
	}
}
