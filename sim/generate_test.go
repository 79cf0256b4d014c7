package sim_test

import (
	"context"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

func TestGenerateExercisesEveryFault(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	m := sim.New(store)
	start := time.Now()
	if err := m.Generate(ctx, sim.DefaultWorkload, 5000); err != nil {
		t.Fatal(err)
	}
	t.Logf("5000 events in %s", time.Since(start))
	evs, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, ev := range evs {
		types[ev.Type]++
	}
	for _, typ := range []string{events.TypeDeclarationComposeFailed, events.TypeDeclarationPushFailed,
		events.TypeReportDeliveredLate, events.TypeModuleReleased, events.TypeApplyReported} {
		if types[typ] == 0 {
			t.Errorf("no %s in the generated stream: %v", typ, types)
		}
	}
	// Every pass applies, and a compose that changes nothing records no
	// event: compose failures are counted against the passes.
	if types[events.TypeModuleReleased] < 5 || types[events.TypeDeclarationComposeFailed]*4 > types[events.TypeApplyReported] {
		t.Errorf("the workload should move modules often and fail composes rarely: %v", types)
	}
	if err := m.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	churning := 0
	for i := 0; i < sim.DefaultWorkload.Nodes; i++ {
		if m.Views.Churn.Active(sim.NodeName(i)) {
			churning++
		}
	}
	if churning == 0 {
		t.Errorf("no node is churning, though containers are removed behind the mesh's back")
	}
}
