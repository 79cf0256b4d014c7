package snapstore_test

import (
	"context"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/projections/snapstore"
	"meshplane/sim"
)

// BenchmarkFirstOpen is the first local call on a simulated history of
// 100,000 events (no snapshot: fold every event, write timeline.db and the
// snapshot) beside a replay of the same history into every projection, in
// the same run: ns/op is the first call's, replay-ns and ratio beside it.
//
//	go test -run '^$' -bench BenchmarkFirstOpen -benchtime 3x ./projections/snapstore/
func BenchmarkFirstOpen(b *testing.B) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, 100_000); err != nil {
		b.Fatal(err)
	}
	reg := events.NewRegistry()
	var replay, first int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		start := nowNanos()
		set := projections.New()
		if err := projections.NewRunner(store, reg, set.All()...).CatchUp(ctx); err != nil {
			b.Fatal(err)
		}
		replay += nowNanos() - start
		dir := b.TempDir()
		b.StartTimer()
		start = nowNanos()
		l, err := snapstore.Open(ctx, store, reg, dir)
		if err != nil {
			b.Fatal(err)
		}
		first += nowNanos() - start
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(replay)/float64(b.N), "replay-ns")
	b.ReportMetric(float64(first)/float64(replay), "first-x-replay")
}

func nowNanos() int64 { return time.Now().UnixNano() }
