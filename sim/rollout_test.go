package sim_test

import (
	"context"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// TestStartFirstWaitsOnTheSimulatedClock: a start-first roll-out in a
// simulation waits its min_healthy on the simulated clock, not the wall
// clock's: the pass returns at once, the mesh's time moved on past it.
func TestStartFirstWaitsOnTheSimulatedClock(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	m := sim.New(store)
	spec := func(img string) events.ModuleSpec {
		return events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: img}},
			Update: &events.UpdatePolicy{Order: events.UpdateStartFirst, MinHealthyMS: 60_000, HealthyDeadlineMS: 300_000, OnFailure: events.UpdatePause}}
	}
	for _, c := range []commands.Command{commands.RegisterNode{Node: "novox"}, commands.DefineModule{Module: "forge", Spec: spec("forge:1")},
		commands.AssignModule{Module: "forge", Node: "novox"}} {
		if err := m.Do(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	first, _, err := m.Pass(ctx, "novox")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Do(ctx, commands.DefineModule{Module: "forge", Spec: spec("forge:2")}); err != nil {
		t.Fatal(err)
	}
	wall := time.Now()
	rep, _, err := m.Pass(ctx, "novox")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcome.Replaced) != 1 || len(rep.Outcome.Failed) != 0 {
		t.Fatalf("the start-first roll-out: %+v", rep.Outcome)
	}
	if took := time.Since(wall); took > 5*time.Second {
		t.Errorf("the pass took %s of the wall clock, waiting min_healthy for real", took)
	}
	if moved := rep.AppliedAt.Sub(first.AppliedAt); moved < time.Minute {
		t.Errorf("the simulated clock moved %s, less than min_healthy 1m", moved)
	}
}
