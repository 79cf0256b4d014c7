package sim_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections"
)

// BenchmarkStatusAt1M: status as the mesh stood at several positions of
// the million-event history (BenchmarkQueries1M's), each a process of its
// own (as a CLI call): open the bolt store read-only, restore the nearest
// checkpoint at or before the position (DATA/checkpoints, kept while one
// fold of the whole history ran, projections.Runner.Keep), fold on to the
// position, answer every node's status as JSON. Beside it, in the same
// run, the full fold from 0 a call without checkpoints makes. Reported:
// the median over the positions of each one's median of 3 calls (whole,
// and after boltstore.Open), the slowest position, and the peak RSS.
func BenchmarkStatusAt1M(b *testing.B) {
	n := uint64(1_000_000)
	if s := os.Getenv("MESH_QUERY_EVENTS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatal(err)
		}
	}
	path := boltHistory(b, generated(b, n))
	ctx := context.Background()
	store, err := boltstore.Open(path, boltstore.ReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var notes []string
	k := projections.NewKeeper(projections.DirCheckpoints(dir), projections.KeepPolicy{}, func(n string) { notes = append(notes, n) })
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
	r.Keep(k, set)
	start := time.Now()
	if err := r.CatchUp(ctx); err != nil {
		b.Fatal(err)
	}
	kept := k.Positions()
	l, _ := projections.DirCheckpoints(dir).List()
	var bytes int64
	for _, c := range l {
		bytes += c.Bytes
	}
	b.Logf("folded %d events keeping %d checkpoints (%.1f MB) in %s; notes %q", head, len(kept), float64(bytes)/1e6, time.Since(start).Round(time.Second), notes)
	store.Close()
	set, r = nil, nil

	positions := []uint64{head / 10, head * 3 / 10, head / 2, head * 7 / 10, head * 9 / 10, head - 100}
	var medians, rest, rss []float64
	b.ResetTimer()
	for range b.N {
		for _, pos := range positions {
			var ms, after []float64
			for range 3 {
				os.Setenv("MESH_QUERY_AT", fmt.Sprint(pos))
				_, inside, open, peak := call(b, "at", path, dir, nil)
				ms = append(ms, inside.Seconds()*1000)
				after = append(after, (inside-open).Seconds()*1000)
				rss = append(rss, float64(peak)/1e6)
			}
			slices.Sort(ms)
			slices.Sort(after)
			b.Logf("status --at %d: %.0f ms, %.0f ms of it after boltstore.Open (medians of 3)", pos, ms[1], after[1])
			medians, rest = append(medians, ms[1]), append(rest, after[1])
		}
	}
	_, replay, replayOpen, replayRSS := call(b, "replay", path, "", nil)
	b.StopTimer()
	slices.Sort(medians)
	slices.Sort(rest)
	b.ReportMetric(rest[len(rest)/2], "at-after-open-median-ms")
	b.ReportMetric((replay-replayOpen).Seconds()*1000, "full-fold-after-open-ms")
	b.ReportMetric(float64(len(kept)), "checkpoints")
	b.ReportMetric(float64(bytes)/1e6, "checkpoints-MB")
	b.ReportMetric(medians[len(medians)/2], "at-median-ms")
	b.ReportMetric(medians[len(medians)-1], "at-slowest-ms")
	b.ReportMetric(slices.Max(rss), "at-maxRSS-MB")
	b.ReportMetric(replay.Seconds()*1000, "full-fold-ms")
	b.ReportMetric(float64(replayRSS)/1e6, "full-fold-maxRSS-MB")
}
