package sim_test

import (
	"context"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// TestQuietPassWithHealthChecksCostsNothingMore: on seed 002's node (330
// resources, 16 held), an agent that follows its containers, each with a
// passing health check, costs a quiet pass exactly what one that does not
// follow them costs (one compact apply.reported, at most 256 bytes as
// stored, give or take a varint's byte): a container that runs as it
// should says nothing. The figure is
// BENCHMARKS.md's ("Issue 34").
func TestQuietPassWithHealthChecksCostsNothingMore(t *testing.T) {
	ctx := context.Background()
	perPass := func(t *testing.T, follow bool) (bytes float64, evs int) {
		store := memstore.New()
		defer store.Close()
		m := sim.New(store)
		if err := seedNode(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.Pass(ctx, "novox"); err != nil { // creates
			t.Fatal(err)
		}
		if follow {
			n, err := m.Follow("novox")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range n.Runtime.Names() {
				if err := n.Runtime.Healthy(c); err != nil {
					t.Fatal(err)
				}
			}
			// The first followed pass says each container's state once.
			if _, _, err := m.Pass(ctx, "novox"); err != nil {
				t.Fatal(err)
			}
			if err := m.Wait(time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := m.Pass(ctx, "novox"); err != nil {
			t.Fatal(err)
		}
		head, err := store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		const passes = 200
		for i := 0; i < passes; i++ {
			if _, _, err := m.Pass(ctx, "novox"); err != nil {
				t.Fatal(err)
			}
		}
		added, err := store.ReadAll(ctx, head, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range added {
			if ev.Type != events.TypeApplyReported {
				t.Fatalf("a quiet pass appended %s: %s", ev.Type, ev.Data)
			}
		}
		rec, idx, _ := storeBytes(added)
		return float64(rec+idx) / passes, len(added)
	}
	off, offEvents := perPass(t, false)
	on, onEvents := perPass(t, true)
	t.Logf("quiet pass, 330 resources: %.1f B/pass without following containers, %.1f B/pass with every container health-checked and healthy (%d and %d events in 200 passes)", off, on, offEvents, onEvents)
	// The same one event a pass; its envelope's varints (position, time)
	// may take a byte more, the followed run being further on.
	if on > 256 || onEvents != offEvents || on-off > 2 {
		t.Errorf("a quiet pass with health checks costs %.1f B in %d events (without: %.1f B in %d): want the same, at most 256", on, onEvents, off, offEvents)
	}
}
