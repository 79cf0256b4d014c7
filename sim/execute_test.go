package sim_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"meshplane/events/storeurl"
	"meshplane/sim"
)

// bar counts what Execute tells a progress bar.
type bar struct {
	adds     int
	last     string
	finished bool
}

func (b *bar) Describe(s string) { b.last = s }
func (b *bar) Add(n int) error   { b.adds += n; return nil }
func (b *bar) Finish() error     { b.finished = true; return nil }

// TestExecute runs mesh sim's whole run without the CLI: on a bolt file
// (measured, its size with it), the bar moved on once a pass and finished;
// a second run on the same file is refused, since it writes a mesh of its
// own.
func TestExecute(t *testing.T) {
	ctx := context.Background()
	b := &bar{}
	o := sim.Options{
		Config: sim.Config{Nodes: 3, Modules: 3, Passes: 4, Seed: 1, Faults: mustFaults(t, "remove:count=1,passes=1-3")},
		Store:  "bolt", Data: t.TempDir(), Measure: true, Bar: b,
	}
	sum, err := sim.Execute(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Passes != 4 || sum.Nodes != 3 || sum.Store != "bolt "+storeurl.Path(o.Data) {
		t.Errorf("summary: %d passes, %d nodes, store %q; want 4, 3 and the bolt file", sum.Passes, sum.Nodes, sum.Store)
	}
	if sum.Score.Injected == 0 || !sum.Score.Met() {
		t.Errorf("score %+v: want the injected loop found, every target met", sum.Score)
	}
	if b.adds != 4 || !b.finished || !strings.HasPrefix(b.last, "pass 4/4, ") || !strings.Contains(b.last, " events") {
		t.Errorf("bar: %d adds, finished %v, last %q; want 4, finished, \"pass 4/4, N events...\"", b.adds, b.finished, b.last)
	}
	m := sum.Measured
	if m == nil {
		t.Fatal("Measure: no measured costs in the summary")
	}
	fi, err := os.Stat(storeurl.Path(o.Data))
	if err != nil {
		t.Fatal(err)
	}
	if m.StoreFile != fi.Size() || m.RebuildEvents != uint64(sum.Events) || m.TimelineRows == 0 ||
		!strings.Contains(m.TimelineQuery, "50 a page") {
		t.Errorf("measured %+v: want the bolt file's %d bytes, %d events rebuilt, a timeline page", m, fi.Size(), sum.Events)
	}

	o.Bar = nil
	if _, err := sim.Execute(ctx, o); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("a second run on the same bolt file: %v, want a refusal naming what it holds", err)
	}
}

// TestOpenStore: the stores a run cannot use are refused with ErrStore,
// before anything is opened.
func TestOpenStore(t *testing.T) {
	for _, kind := range []string{"", "esdb://x", "kurrentdb://x", "mysql://h/db", "mesh.db"} {
		t.Run(kind, func(t *testing.T) {
			_, _, _, err := sim.OpenStore(context.Background(), kind, t.TempDir())
			if !errors.Is(err, sim.ErrStore) || !strings.Contains(err.Error(), "--store ") {
				t.Errorf("OpenStore(%q): %v, want ErrStore naming --store", kind, err)
			}
		})
	}
	st, name, closeFn, err := sim.OpenStore(context.Background(), "memory", "")
	if err != nil {
		t.Fatal(err)
	}
	if name != "memory" {
		t.Errorf("OpenStore(memory) is named %q", name)
	}
	if head, err := st.Head(context.Background()); err != nil || head != 0 {
		t.Errorf("memory store head %d, %v; want an empty store", head, err)
	}
	if err := closeFn(); err != nil {
		t.Error(err)
	}
}

func TestFaultsOf(t *testing.T) {
	for _, tc := range []struct {
		spec string
		n    int // faults, -1: an error
	}{
		{"default", len(sim.DefaultFaults(24))},
		{"none", 0},
		{"", 0},
		{"remove:count=1,passes=2-4;rollout:passes=9", 2},
		{"flood", -1},
	} {
		got, err := sim.FaultsOf(tc.spec, 24)
		switch {
		case tc.n < 0 && !errors.Is(err, sim.ErrSpec):
			t.Errorf("FaultsOf(%q): %v, want ErrSpec", tc.spec, err)
		case tc.n >= 0 && (err != nil || len(got) != tc.n):
			t.Errorf("FaultsOf(%q) = %d faults, %v; want %d", tc.spec, len(got), err, tc.n)
		}
	}
}
