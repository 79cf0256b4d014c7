package sim_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"meshplane/events/memstore"
	"meshplane/sim"
)

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// BenchmarkDetectorScore1000Nodes is TestDetectorScore's "every fault at
// once" at 1,000 nodes (MESH_SIM_NODES), 10 of them with 330 resources,
// over MESH_SIM_PASSES passes (default 20), on the memory store: the
// score, and what a pass costs.
//
//	go test -run='^$' -bench=DetectorScore1000 -benchtime=1x -timeout=60m ./sim/
func BenchmarkDetectorScore1000Nodes(b *testing.B) {
	nodes, passes := envInt(b, "MESH_SIM_NODES", 1000), envInt(b, "MESH_SIM_PASSES", 20)
	ctx := context.Background()
	for b.Loop() {
		store := memstore.New()
		r, err := sim.NewRun(ctx, store, sim.Config{Nodes: nodes, Modules: 48, Passes: passes, Seed: 1, Faults: sim.DefaultFaults(passes), Big: nodes / 100})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Passes(ctx); err != nil {
			b.Fatal(err)
		}
		s := r.Score(r.Detections(r.Mesh.Views.Churn))
		if !s.Met() {
			b.Errorf("targets missed: %+v", s)
		}
		sum := r.Summary("memory")
		b.ReportMetric(s.Recall, "recall")
		b.ReportMetric(s.Precision, "precision")
		b.ReportMetric(float64(s.DelayMax), "delay-max-passes")
		b.ReportMetric(float64(s.FalseLoopsLegit), "false-loops-legit")
		b.ReportMetric(float64(s.Injected), "injected")
		b.ReportMetric(sum.PassEvents, "events/pass")
		b.ReportMetric(sum.PassBytes, "bytes/pass")
		b.ReportMetric(r.Wall().Seconds()/float64(passes), "s/pass")
		store.Close()
	}
}
