package commands_test

import (
	"context"
	"testing"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/wire"
)

// TestRecordApplyRecordsFailedRollouts: a report's failed roll-outs are
// one rollout.failed a module, caused by the apply, saying what the mesh
// does about it: give up (on_failure: pause, or no update block), revert
// to the position before the module's last change (on_failure: revert),
// or stop when that change was itself a revert after a failed roll-out
// (never a loop).
func TestRecordApplyRecordsFailedRollouts(t *testing.T) {
	pause := &events.UpdatePolicy{Order: events.UpdateStartFirst, MinHealthyMS: 1000, HealthyDeadlineMS: 60_000, OnFailure: events.UpdatePause}
	revert := &events.UpdatePolicy{Order: events.UpdateStartFirst, MinHealthyMS: 1000, HealthyDeadlineMS: 60_000, OnFailure: events.UpdateRevert}
	spec := func(img string, u *events.UpdatePolicy) events.ModuleSpec {
		return events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: img}}, Update: u}
	}
	tests := []struct {
		name       string
		update     *events.UpdatePolicy
		lastRevert bool // the last change was a revert after a failed roll-out
		action     string
	}{
		{"no update block", nil, false, events.RolloutGaveUp},
		{"pause", pause, false, events.RolloutGaveUp},
		{"revert", revert, false, events.RolloutRevert},
		{"the revert failed too", revert, true, events.RolloutStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h, store := doorSetup(t)
			must(t, h, commands.DefineModule{Module: "forge", Spec: spec("forge:1", tt.update)})
			first, err := store.ReadStream(ctx, events.ModuleStream("forge"), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			must(t, h, commands.DefineModule{Module: "forge", Spec: spec("forge:2", tt.update)})
			if tt.lastRevert {
				// forge:2 failed and was reverted to forge:1: the revert's
				// own roll-out is what fails now.
				must(t, h, commands.RevertModule{Module: "forge", To: commands.Moment{Position: first[0].Position}, After: "0193a0c4-failed"})
			}
			d := goodDelivery()
			d.Workload = &wire.Workload{Rollouts: []events.RolloutFailure{{Module: "forge", Container: "web", Why: "exited with code 1: cat: /no/such/file"}}}
			stored, err := h.RecordApply(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != 2 || stored[1].Type != events.TypeRolloutFailed || stored[1].Causation != d.ApplyID.String() {
				t.Fatalf("recorded %+v, want apply.reported and rollout.failed caused by it", stored)
			}
			p, err := events.NewRegistry().Decode(stored[1])
			if err != nil {
				t.Fatal(err)
			}
			rf := p.(events.RolloutFailed)
			if rf.Action != tt.action || rf.Module != "forge" || rf.Node != "n1" || rf.Declaration != "n1/3" || len(rf.Containers) != 1 {
				t.Fatalf("rollout.failed %+v, want action %s", rf, tt.action)
			}
			mod, err := store.ReadStream(ctx, events.ModuleStream("forge"), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := uint64(0); tt.action == events.RolloutRevert {
				want = mod[len(mod)-1].Position - 1
				if rf.RevertTo != want {
					t.Fatalf("revert to %d, want %d (before the last definition)", rf.RevertTo, want)
				}
			} else if rf.RevertTo != 0 {
				t.Fatalf("revert_to %d on %s", rf.RevertTo, rf.Action)
			}
		})
	}
}
