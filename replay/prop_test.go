package replay_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"meshplane/events/export"
	"meshplane/events/memstore"
	"meshplane/replay"
	"meshplane/sim"
)

// propKinds are the faults a replay reproduces from the history alone:
// every kind but lossy (a read answered as "no modules" leaves no trace
// in the history, so a replay cannot know to answer it so again).
var propKinds = []sim.FaultKind{sim.FaultReads, sim.FaultCut, sim.FaultRemove, sim.FaultJoin,
	sim.FaultLeave, sim.FaultBurst, sim.FaultMove, sim.FaultRollout, sim.FaultAdopt}

// drawPlan draws a fault plan of 1 to 5 faults over passes passes.
func drawPlan(t *rapid.T, passes int) []sim.Fault {
	n := rapid.IntRange(1, 5).Draw(t, "faults")
	out := make([]sim.Fault, n)
	for i := range out {
		f := sim.Fault{Kind: rapid.SampledFrom(propKinds).Draw(t, "kind"), Every: 1}
		f.From = rapid.IntRange(1, passes).Draw(t, "from")
		f.To = rapid.IntRange(f.From, passes).Draw(t, "to")
		if f.Kind != sim.FaultRollout {
			f.Count = rapid.IntRange(1, 2).Draw(t, "count")
		}
		if f.Kind == sim.FaultReads && rapid.Bool().Draw(t, "every other") {
			f.Every = 2
		}
		out[i] = f
	}
	return out
}

// TestReplayAgreesProperty: a history this build recorded under any plan
// of faults but lossy, exported and replayed, agrees with itself, pass by
// pass. (The controller's pass composes its nodes at once, so the order
// of one pass's composes differs from run to run: a few runs of one plan
// draw different histories. Replay no longer reads passes from that
// order: the controller's events name their pass.)
//
// It draws 30 plans a run unless -rapid.checks says otherwise; run it
// wide with -rapid.checks=3000 (about three minutes on two shared cores).
func TestReplayAgreesProperty(t *testing.T) {
	setChecks := false
	flag.Visit(func(f *flag.Flag) { setChecks = setChecks || f.Name == "rapid.checks" })
	if !setChecks {
		if err := flag.Set("rapid.checks", "30"); err != nil {
			t.Fatal(err)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		passes := rapid.IntRange(3, 6).Draw(t, "passes")
		cfg := sim.Config{
			Nodes:   rapid.IntRange(2, 4).Draw(t, "nodes"),
			Modules: rapid.IntRange(3, 5).Draw(t, "modules"),
			Passes:  passes,
			Seed:    rapid.Uint64Range(0, 1<<20).Draw(t, "seed"),
			Faults:  drawPlan(t, passes),
			// Small nodes: two modules of two containers each.
			ModulesPerNode: 2, Containers: 2,
		}
		spec := make([]string, len(cfg.Faults))
		for i, f := range cfg.Faults {
			spec[i] = f.String()
		}
		store := memstore.New()
		defer store.Close()
		r, err := sim.NewRun(ctx, store, cfg)
		if err != nil {
			t.Fatalf("sim %q: %v", strings.Join(spec, ";"), err)
		}
		if err := r.Passes(ctx); err != nil {
			t.Fatalf("sim %q: %v", strings.Join(spec, ";"), err)
		}
		dir, err := os.MkdirTemp("", "replay-prop-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "history.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := export.Write(ctx, store, 0, f, nil); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Run(ctx, path, replay.Options{})
		if err != nil {
			if rep != nil {
				for _, d := range rep.Divergences {
					t.Logf("pass %d %s %s: recorded %q, today %q", d.Pass, d.Node, d.Kind, d.Recorded, d.Today)
				}
			}
			t.Fatalf("faults %q: %v", strings.Join(spec, ";"), err)
		}
		if !rep.Agree || rep.Passes == 0 {
			t.Fatalf("faults %q: agree %v over %d passes", strings.Join(spec, ";"), rep.Agree, rep.Passes)
		}
	})
}
