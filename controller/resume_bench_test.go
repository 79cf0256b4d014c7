package controller_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

func envUint(name string, def uint64) uint64 {
	if v, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkRestart is a controller's first answer (Status) after it
// starts on a long history: resuming from its checkpoints on disk (as the
// daemon does: DirCheckpoints, the Keeper's default policy, kept by a
// controller that folded the history before) beside a replay from 0 of the
// same history, in the same run. The history is sim's generator on
// MESH_RESTART_NODES nodes (default 1,000; the other fields
// sim.DefaultWorkload's) up to MESH_RESTART_EVENTS events (default
// 100,000), in memory (memstore).
//
//	go test -run '^$' -bench BenchmarkRestart -benchtime 3x ./controller/
func BenchmarkRestart(b *testing.B) {
	ctx := context.Background()
	w := sim.DefaultWorkload
	w.Nodes = int(envUint("MESH_RESTART_NODES", 1000))
	n := envUint("MESH_RESTART_EVENTS", 100_000)
	store := memstore.New()
	defer store.Close()
	start := time.Now()
	if err := sim.New(store).Generate(ctx, w, n); err != nil {
		b.Fatal(err)
	}
	head, _ := store.Head(ctx)
	b.Logf("generated %d events of %d nodes in %s", head, w.Nodes, time.Since(start).Round(time.Second))
	dir := b.TempDir()
	keeper := func() *projections.Keeper {
		return projections.NewKeeper(projections.DirCheckpoints(dir), projections.KeepPolicy{}, nil)
	}
	ran, err := controller.New(controller.Config{Store: store, Checkpoints: keeper()})
	if err != nil {
		b.Fatal(err)
	}
	if err := ran.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	held, _ := projections.DirCheckpoints(dir).List()
	var bytes int64
	for _, c := range held {
		bytes += c.Bytes
	}
	b.Logf("%d checkpoints on disk, %d MB, the newest at %d of %d", len(held), bytes>>20, held[len(held)-1].Position, head)
	ran = nil

	first := func(b *testing.B, resume bool) {
		for range b.N {
			c, err := controller.New(controller.Config{Store: store, Checkpoints: keeper()})
			if err != nil {
				b.Fatal(err)
			}
			if resume {
				if from, err := c.Resume(ctx); err != nil || from == 0 {
					b.Fatalf("resume: %d, %v", from, err)
				}
			}
			if _, err := c.Status(ctx, api.StatusRequest{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(head)*float64(b.N)/b.Elapsed().Seconds(), "history-events/s")
	}
	b.Run("replay", func(b *testing.B) { first(b, false) })
	b.Run("resume", func(b *testing.B) { first(b, true) })
}
