package projections_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// simHistory is a store holding about n events of sim.DefaultWorkload, and
// the projections folded from it.
func simHistory(t *testing.T, n uint64) (*memstore.Store, *projections.Set) {
	t.Helper()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	if err := sim.New(store).Generate(context.Background(), sim.DefaultWorkload, n); err != nil {
		t.Fatal(err)
	}
	views := projections.New()
	if err := projections.NewRunner(store, events.NewRegistry(), views.All()...).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	return store, views
}

func positions(es []projections.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Position
	}
	return out
}

// TestQueryEqualsScan: for random filters and cursors, in both directions,
// Query returns what a scan of every entry selects.
func TestQueryEqualsScan(t *testing.T) {
	_, views := simHistory(t, 4000)
	all := views.Timeline.Query(projections.Filter{})
	if len(all) < 4000 {
		t.Fatalf("%d entries", len(all))
	}
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 400 {
		f := randomFilter(r, all, i)
		if r.IntN(2) == 0 {
			f.To = all[r.IntN(len(all))].At
		}
		if r.IntN(2) == 0 {
			f.After = uint64(r.IntN(len(all) + 2))
		}
		if r.IntN(2) == 0 {
			f.Before = uint64(r.IntN(len(all) + 2))
		}
		if r.IntN(3) > 0 {
			f.Limit = 1 + r.IntN(60)
		}
		var want []projections.Entry
		for _, en := range all {
			if f.Selects(en) {
				want = append(want, en)
			}
		}
		if f.Limit > 0 && len(want) > f.Limit {
			if f.Forward {
				want = want[:f.Limit]
			} else {
				want = want[len(want)-f.Limit:]
			}
		}
		got := views.Timeline.Query(f)
		if !slices.Equal(positions(got), positions(want)) {
			t.Fatalf("filter %+v: positions %v, want %v", f, positions(got), positions(want))
		}
		for k := range got {
			if got[k].Summary != want[k].Summary || !slices.Equal(got[k].Modules, want[k].Modules) {
				t.Fatalf("filter %+v: entry %d rendered %+v, want %+v", f, got[k].Position, got[k], want[k])
			}
		}
	}
}

// TestQueryPagesVisitEveryEntryOnce pages a filter forward and backward by
// cursor and finds each match exactly once, in order.
func TestQueryPagesVisitEveryEntryOnce(t *testing.T) {
	_, views := simHistory(t, 3000)
	for _, f := range []projections.Filter{
		{},
		{Node: sim.NodeName(3)},
		{Type: events.TypeApplyReported},
		{Module: "mod-001"},
		{Node: sim.NodeName(5), Type: events.TypeDeclarationComposed},
	} {
		want := positions(views.Timeline.Query(f))
		if len(want) == 0 {
			t.Fatalf("filter %+v selects nothing", f)
		}
		for _, forward := range []bool{true, false} {
			var got []uint64
			g := f
			g.Forward, g.Limit = forward, 37
			for {
				p := views.Timeline.Query(g)
				if len(p) == 0 {
					break
				}
				if forward {
					got = append(got, positions(p)...)
					g.After = p[len(p)-1].Position
				} else {
					got = append(positions(p), got...)
					g.Before = p[0].Position
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("filter %+v forward=%v: paged %d entries, want %d (or out of order)", f, forward, len(got), len(want))
			}
		}
	}
}
