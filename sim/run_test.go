package sim_test

import (
	"context"
	"testing"

	"meshplane/events/memstore"
	"meshplane/sim"
)

// DefaultSpec-like faults at a small size.
const smallSpec = "remove:count=2,passes=3-8;lossy:count=1,passes=10-15,every=2;reads:count=1,passes=17-20,every=2;" +
	"cut:count=2,passes=4-6;join:count=2,passes=12-14;leave:count=1,passes=16;burst:count=2,passes=22-23;" +
	"move:count=3,passes=25-27;rollout:passes=29;adopt:count=2,passes=1-20;remove:count=1,passes=31-34"

func runSmall(t testing.TB, spec string, nodes, passes, big int, seed uint64) (*sim.Run, sim.Score) {
	t.Helper()
	faults, err := sim.ParseFaults(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	r, err := sim.NewRun(ctx, store, sim.Config{Nodes: nodes, Modules: 8, Passes: passes, Seed: seed, Faults: faults, Big: big})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Passes(ctx); err != nil {
		t.Fatal(err)
	}
	return r, r.Score(r.Detections(r.Mesh.Views.Churn))
}

func TestRunScoresTheDetector(t *testing.T) {
	r, s := runSmall(t, smallSpec, 12, 36, 3, 1)
	t.Logf("truth %+v", r.Truth())
	t.Logf("score %+v", s)
	for _, st := range r.Stats() {
		t.Logf("%+v", st)
	}
}

func TestRunBig(t *testing.T) {
	r, s := runSmall(t, "remove:rate=100%,passes=3-6;rollout:passes=8;lossy:count=1,passes=10-12;rollout:passes=13;remove:rate=50%,passes=13-15", 8, 18, 2, 2)
	t.Logf("truth %+v", r.Truth())
	t.Logf("score %+v", s)
}
