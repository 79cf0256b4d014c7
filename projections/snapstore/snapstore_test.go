package snapstore_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/projections/snapstore"
	"meshplane/sim"
)

// history is every event of a generated mesh of about n events.
func history(t *testing.T, n uint64) []events.Event {
	t.Helper()
	store := memstore.New()
	defer store.Close()
	if err := sim.New(store).Generate(context.Background(), sim.DefaultWorkload, n); err != nil {
		t.Fatal(err)
	}
	evs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// storeOf is a store holding evs[:n].
func storeOf(t *testing.T, evs []events.Event, n int) *memstore.Store {
	t.Helper()
	s := memstore.New()
	t.Cleanup(func() { s.Close() })
	for _, ev := range evs[:n] {
		if _, err := s.Append(context.Background(), ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func open(t *testing.T, store events.Store, dir string) *snapstore.Local {
	t.Helper()
	l, err := snapstore.Open(context.Background(), store, events.NewRegistry(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func positions(es []projections.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Position
	}
	return out
}

// sameAsReplay fails unless l answers as projections folded from 0 do: the
// small projections' JSON, and timeline pages for random filters.
func sameAsReplay(t *testing.T, store events.Store, l *snapstore.Local) {
	t.Helper()
	want, pos := replay(t, store)
	sameAs(t, want, pos, l, 200)
}

// replay is every projection folded from 0 over store, and the position.
func replay(t *testing.T, store events.Store) (*projections.Set, uint64) {
	t.Helper()
	want := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), want.All()...)
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	return want, r.Position()
}

// sameAs fails unless l answers as want (a replay to pos) does: the small
// projections' JSON, and timeline pages for that many random filters.
func sameAs(t *testing.T, want *projections.Set, pos uint64, l *snapstore.Local, filters int) {
	t.Helper()
	if d := differs(want, pos, l, filters, true); d != "" {
		t.Fatal(d)
	}
}

// differs says how l's answers differ from want's (a replay to pos): ""
// when they do not (see sameAs); without whole, the whole timeline is not
// compared (only the pages of the filters).
func differs(want *projections.Set, pos uint64, l *snapstore.Local, filters int, whole bool) string {
	if l.Runner.Position() != pos {
		return fmt.Sprintf("at position %d, want %d", l.Runner.Position(), pos)
	}
	a, err := projections.Snapshot(want.Churn, want.Status, want.Holds)
	if err != nil {
		return err.Error()
	}
	b, err := projections.Snapshot(l.Views.Churn, l.Views.Status, l.Views.Holds)
	if err != nil {
		return err.Error()
	}
	if !bytes.Equal(a, b) {
		return "small projections differ from a replay"
	}
	for _, n := range want.Roster.Nodes() {
		a, _ := want.Roster.Current(n)
		b, err := l.Views.Roster.Current(n)
		if err != nil || a.Declaration != b.Declaration || a.Position != b.Position {
			return fmt.Sprintf("current declaration of %s: %s at %d (%v), want %s at %d", n, b.Declaration, b.Position, err, a.Declaration, a.Position)
		}
	}
	all := want.Timeline.Query(projections.Filter{})
	got, err := all, error(nil)
	if whole {
		got, err = l.Timeline(projections.Filter{})
	}
	if err != nil {
		return err.Error()
	}
	if !slices.EqualFunc(got, all, func(x, y projections.Entry) bool {
		return x.Position == y.Position && x.Summary == y.Summary && x.Idle == y.Idle && x.Churn == y.Churn &&
			slices.Equal(x.Modules, y.Modules) && slices.Equal(x.Resources, y.Resources) && x.At.Equal(y.At)
	}) {
		return fmt.Sprintf("the whole timeline differs from a replay's (%d entries, want %d)", len(got), len(all))
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	pick := func(f func(projections.Entry) []string) string {
		if rnd.IntN(2) == 0 {
			return ""
		}
		if vs := f(all[rnd.IntN(len(all))]); len(vs) > 0 {
			return vs[rnd.IntN(len(vs))]
		}
		return ""
	}
	for range filters {
		f := projections.Filter{
			Node:     pick(func(e projections.Entry) []string { return []string{e.Node} }),
			Type:     pick(func(e projections.Entry) []string { return []string{e.Type} }),
			Module:   pick(func(e projections.Entry) []string { return e.Modules }),
			Resource: pick(func(e projections.Entry) []string { return e.Resources }),
			Forward:  rnd.IntN(2) == 0,
			Limit:    rnd.IntN(40),
		}
		if rnd.IntN(2) == 0 {
			f.From = all[rnd.IntN(len(all))].At
		}
		if rnd.IntN(2) == 0 {
			f.To = all[rnd.IntN(len(all))].At
		}
		if rnd.IntN(2) == 0 {
			f.After = uint64(rnd.IntN(len(all)))
		}
		if rnd.IntN(2) == 0 {
			f.Before = uint64(rnd.IntN(len(all)))
		}
		got, err := l.Timeline(f)
		if err != nil {
			return err.Error()
		}
		if w := want.Timeline.Query(f); !slices.Equal(positions(got), positions(w)) {
			return fmt.Sprintf("filter %+v: %v, want %v", f, positions(got), positions(w))
		}
	}
	return ""
}

func TestOpenEqualsReplay(t *testing.T) {
	defer snapstore.SetFlush(700, 300)()
	evs := history(t, 3000)
	dir := t.TempDir()
	for i, n := range []int{1, 1200, 1201, 2500, len(evs)} {
		store := storeOf(t, evs, n)
		l := open(t, store, dir)
		switch {
		case i == 1: // the first to find more than 300 new events saves the first snapshot
			if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "no snapshot") {
				t.Errorf("step %d: notes %q, want one saying there was no snapshot", i, l.Notes)
			}
		case len(l.Notes) > 0:
			t.Errorf("step %d: notes %q", i, l.Notes)
		}
		if i > 1 && l.From == 0 { // the first call (1 event) left no snapshot
			t.Errorf("step %d: folded from 0, not from the snapshot", i)
		}
		sameAsReplay(t, store, l)
		l.Close()
	}
}

func TestOpenIgnoresABadCache(t *testing.T) {
	defer snapstore.SetFlush(700, 300)()
	evs := history(t, 2000)
	tests := []struct {
		name  string
		spoil func(t *testing.T, dir string)
		note  string
	}{
		{"a damaged snapshot", func(t *testing.T, dir string) {
			path := filepath.Join(dir, snapstore.SnapshotFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 1
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "checksum"},
		{"a snapshot of another store", func(t *testing.T, dir string) {
			other := storeOf(t, history(t, 500), 400)
			l := open(t, other, t.TempDir())
			if err := projections.SaveSnapshot(context.Background(), filepath.Join(dir, snapstore.SnapshotFile), l.Runner, l.Views); err != nil {
				t.Fatal(err)
			}
		}, "another history"},
		{"a snapshot behind the timeline index", func(t *testing.T, dir string) {
			old := t.TempDir()
			open(t, storeOf(t, evs, 500), old).Close()
			b, err := os.ReadFile(filepath.Join(old, snapstore.SnapshotFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, snapstore.SnapshotFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "disagree"},
		{"a damaged timeline index", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, snapstore.TimelineFile), []byte("not bbolt"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "timeline.db is damaged (the file is 9 bytes, too short for bbolt's two meta pages): removed it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			open(t, storeOf(t, evs, 1500), dir).Close()
			tc.spoil(t, dir)
			store := storeOf(t, evs, len(evs))
			l := open(t, store, dir)
			if !strings.Contains(strings.Join(l.Notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one saying %q", l.Notes, tc.note)
			}
			if l.From != 0 {
				t.Errorf("loaded at %d from a bad cache", l.From)
			}
			sameAsReplay(t, store, l)
		})
	}
}
