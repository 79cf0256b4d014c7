package sim_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
)

// BenchmarkDiffDay1M measures mesh diff across a day on the million events
// of BenchmarkRebuild1M, in a memstore: Controller.Diff (what mesh diff
// asks, the changed resources' fields included) from the
// last event a day before each of five ends (a fifth, two fifths, ... and
// the whole of the history) to that end, with, as the baseline in the same
// run, a full fold of the projections diff folds (all but the timeline)
// from 0 to the head. It reports the median diff, the fold, their ratio,
// the peak heap a diff adds (sampled beside it) and the events a day spans.
//
// MESH_DIFF_EVENTS=N makes it run on N events instead (a quick check).
func BenchmarkDiffDay1M(b *testing.B) {
	n := uint64(1_000_000)
	if s := os.Getenv("MESH_DIFF_EVENTS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatal(err)
		}
	}
	evs := generated(b, n)
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	for _, ev := range evs {
		if _, err := store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			b.Fatal(err)
		}
	}
	reg := events.NewRegistry()
	head := uint64(len(evs))
	type span struct{ from, to uint64 }
	var spans []span
	for i := uint64(1); i <= 5; i++ {
		to := head * i / 5
		from, err := controller.PositionAt(ctx, store, commands.Moment{At: evs[to-1].At.Add(-24 * time.Hour)}, head)
		if err != nil {
			b.Fatal(err)
		}
		spans = append(spans, span{from, to})
	}
	c, err := controller.New(controller.Config{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	// As a running controller has: its history folded, checkpoints kept.
	syncStart := time.Now()
	if err := c.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("the controller folded %d events keeping %d checkpoints in %s", head, len(c.Checkpoints().Positions()), time.Since(syncStart).Round(time.Millisecond))
	var diffs []float64
	var fold time.Duration
	var peak uint64
	b.ResetTimer()
	for range b.N {
		for _, s := range spans {
			stop := sampleHeap(&peak)
			start := time.Now()
			if _, err := c.Diff(ctx, api.DiffRequest{From: fmt.Sprint(s.from), To: fmt.Sprint(s.to)}); err != nil {
				b.Fatal(err)
			}
			diffs = append(diffs, time.Since(start).Seconds()*1000)
			stop()
		}
		start := time.Now()
		set := projections.New()
		if err := projections.NewRunner(store, reg, set.Small()...).CatchUp(ctx); err != nil {
			b.Fatal(err)
		}
		fold += time.Since(start)
	}
	slices.Sort(diffs)
	median := diffs[len(diffs)/2]
	foldMS := fold.Seconds() * 1000 / float64(b.N)
	var day float64
	for _, s := range spans {
		day += float64(s.to-s.from) / float64(len(spans))
	}
	b.ReportMetric(median, "diff-day-ms")
	b.ReportMetric(foldMS, "full-fold-ms")
	b.ReportMetric(median/foldMS, "diff/fold")
	b.ReportMetric(float64(peak)/1e6, "diff-peak-heap-MB")
	b.ReportMetric(day, "events-a-day")
	b.ReportMetric(float64(head), "events")
}

// sampleHeap records in peak the largest growth of the heap in use over
// what it was when called (after a collection: the store's events are
// not counted), seen every 5 ms until the returned stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > ms0.HeapInuse {
				*peak = max(*peak, ms.HeapInuse-ms0.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
