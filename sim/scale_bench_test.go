package sim_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"meshplane/sim"
)

// BenchmarkSimScale is mesh sim at scale (issue 23, item 4): MESH_SIM_NODES
// nodes (default 10,000, a hundredth of them with 330 resources), 48
// modules, MESH_SIM_PASSES passes (default 20) with every fault
// (DefaultFaults), on each store of MESH_SIM_STORES (default
// "memory,bolt,postgres"), as mesh sim --store runs them (sim.Execute,
// OpenStore: the bolt file in a temporary directory, a throwaway PostgreSQL
// cluster). It reports the set-up's time (modules defined, nodes
// registered, their settings and assigns), the passes' mean and slowest,
// and the churn detector's score against the simulator's truth; the misses
// and false detections are logged by name.
//
//	MESH_SIM_NODES=10000 go test -run='^$' -bench=SimScale -benchtime=1x -timeout=120m ./sim/
func BenchmarkSimScale(b *testing.B) {
	nodes, passes := envInt(b, "MESH_SIM_NODES", 10000), envInt(b, "MESH_SIM_PASSES", 20)
	stores := "memory,bolt,postgres"
	if s := os.Getenv("MESH_SIM_STORES"); s != "" {
		stores = s
	}
	for _, store := range strings.Split(stores, ",") {
		b.Run(store, func(b *testing.B) {
			for b.Loop() {
				o := sim.Options{
					Config: sim.Config{Nodes: nodes, Modules: 48, Passes: passes, Seed: 1, Faults: sim.DefaultFaults(passes), Big: nodes / 100},
					Store:  store, Data: b.TempDir(),
				}
				var last time.Time
				o.Progress = func(ps sim.PassStats) {
					if ps.Pass == 0 || time.Since(last) > 30*time.Second || ps.Pass == passes {
						b.Logf("%s: pass %d: %d events, %.1f MB, %s", store, ps.Pass, ps.Events, float64(ps.Bytes)/1e6, ps.Took.Round(time.Millisecond))
						last = time.Now()
					}
				}
				sum, err := sim.Execute(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				reportScale(b, sum)
			}
		})
	}
}

// reportScale reports a run's set-up, its passes and its score, and logs
// every miss and false detection.
func reportScale(b *testing.B, sum sim.Summary) {
	var total, slowest time.Duration
	for _, ps := range sum.PerPass[1:] {
		total += ps.Took
		slowest = max(slowest, ps.Took)
	}
	s := sum.Score
	b.ReportMetric(sum.PerPass[0].Took.Seconds(), "setup-s")
	b.ReportMetric(total.Seconds()/float64(len(sum.PerPass)-1), "pass-s")
	b.ReportMetric(slowest.Seconds(), "slowest-pass-s")
	b.ReportMetric(float64(s.Injected), "injected")
	b.ReportMetric(s.Recall, "recall")
	b.ReportMetric(s.Precision, "precision")
	b.ReportMetric(float64(s.DelayMax), "delay-max-passes")
	b.ReportMetric(float64(s.FalseLoopsLegit), "false-loops-legit")
	b.ReportMetric(float64(s.FalseOther), "false-other")
	b.ReportMetric(float64(sum.Events), "events")
	for _, m := range s.Missed {
		b.Logf("missed: %s loop=%v flip=%v passes %d-%d", m.Node, m.Loop, m.Flip, m.Start, m.End)
	}
	for _, f := range s.False {
		b.Logf("false: %s loop=%v flip=%v start %d detected %d legit=%v", f.Node, f.Loop, f.Flip, f.Start, f.Detected, f.Legit)
	}
	for _, ps := range sum.PerPass {
		b.Logf("pass %d: %d nodes, %d events, %.2f MB, %d compose failed, %d push failed, %d heavy, %s",
			ps.Pass, ps.Nodes, ps.Events, float64(ps.Bytes)/1e6, ps.ComposeFailed, ps.PushFailed, ps.Heavy, ps.Took.Round(time.Millisecond))
	}
	if !s.Met() {
		b.Errorf("targets missed: recall %.2f, false loops on legitimate passes %d, delay max %d", s.Recall, s.FalseLoopsLegit, s.DelayMax)
	}
}
