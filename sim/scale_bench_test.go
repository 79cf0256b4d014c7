package sim_test

import (
	"context"
	"os"
	"strings"
	"syscall"
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
// registered, their settings and assigns), the passes' mean and slowest
// (wall, and the process's CPU), the peak RSS, and the churn detector's
// score against the simulator's truth; the misses and false detections
// are logged by name, and every pass's counts.
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
				// The process's CPU a pass (the controller's, the store
				// client's and the simulated fleet's), beside the pass's
				// wall time, which a shared machine's load stretches.
				cpu := make([]time.Duration, 0, passes+1)
				prev := processCPU(b)
				o.Progress = func(ps sim.PassStats) {
					now := processCPU(b)
					cpu = append(cpu, now-prev)
					prev = now
				}
				sum, err := sim.Execute(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				reportScale(b, sum, cpu)
			}
		})
	}
}

// reportScale reports a run's set-up, its passes and its score, and logs
// every miss and false detection.
func reportScale(b *testing.B, sum sim.Summary, cpu []time.Duration) {
	var total, slowest, totalCPU, slowestCPU time.Duration
	for i, ps := range sum.PerPass[1:] {
		total += ps.Took
		slowest = max(slowest, ps.Took)
		totalCPU += cpu[i+1]
		slowestCPU = max(slowestCPU, cpu[i+1])
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1e6, "peak-rss-GB") // the process's so far: the largest store's run, when several
	b.ReportMetric(cpu[0].Seconds(), "setup-cpu-s")
	b.ReportMetric(totalCPU.Seconds()/float64(len(cpu)-1), "pass-cpu-s")
	b.ReportMetric(slowestCPU.Seconds(), "slowest-pass-cpu-s")
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
	for i, ps := range sum.PerPass {
		b.Logf("pass %d: %d nodes, %d events, %.2f MB, %d compose failed, %d push failed, %d heavy, %s wall, %s CPU",
			ps.Pass, ps.Nodes, ps.Events, float64(ps.Bytes)/1e6, ps.ComposeFailed, ps.PushFailed, ps.Heavy,
			ps.Took.Round(time.Millisecond), cpu[i].Round(time.Millisecond))
	}
	if !s.Met() {
		b.Errorf("targets missed: recall %.2f, false loops on legitimate passes %d, delay max %d", s.Recall, s.FalseLoopsLegit, s.DelayMax)
	}
}

// processCPU is the process's CPU time so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
