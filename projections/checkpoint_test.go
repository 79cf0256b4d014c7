package projections_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
)

// kept folds store with a keeper over dir (policy p) in steps of step
// events, as a long catch-up folds page after page, and returns the
// keeper and its notes.
func kept(t *testing.T, store events.Store, dir string, p projections.KeepPolicy, step uint64) (*projections.Keeper, *[]string) {
	t.Helper()
	ctx := context.Background()
	var notes []string
	k := projections.NewKeeper(projections.DirCheckpoints(dir), p, func(n string) { notes = append(notes, n) })
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
	r.Keep(k, set)
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for pos := step; pos < head+step; pos += step {
		if err := r.CatchUpTo(ctx, min(pos, head)); err != nil {
			t.Fatal(err)
		}
	}
	return k, &notes
}

// sameAt fails unless the projections folded to pos from k's checkpoints
// answer as those folded from 0.
func sameAt(t *testing.T, store events.Store, pos uint64, k *projections.Keeper) {
	t.Helper()
	ctx := context.Background()
	want, rw, err := projections.FoldTo(ctx, store, events.NewRegistry(), pos, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, rg, err := projections.FoldTo(ctx, store, events.NewRegistry(), pos, k)
	if err != nil {
		t.Fatal(err)
	}
	if rg.Position() != pos {
		t.Errorf("folded to %d, want %d", rg.Position(), pos)
	}
	sameState(t, want, got, rw, rg)
}

func TestFoldToFromCheckpointsEqualsFoldFromZero(t *testing.T) {
	store, _ := simHistory(t, 3000)
	dir := t.TempDir()
	k, notes := kept(t, store, dir, projections.KeepPolicy{Every: 250, MaxCount: 5}, 100)
	ps := k.Positions()
	if len(ps) != 5 || ps[len(ps)-1] != 3000 {
		t.Fatalf("checkpoints at %v: want 5, the newest at the head (3000)", ps)
	}
	// Thinned by age: the gaps grow toward the oldest.
	for i := 2; i < len(ps); i++ {
		if ps[i]-ps[i-1] > ps[i-1]-ps[i-2] {
			t.Errorf("checkpoints %v: the gap after %d is wider than the one before it", ps, ps[i-1])
		}
	}
	for _, pos := range []uint64{1, ps[0] - 1, ps[0], ps[0] + 1, 1234, ps[3] + 7, 2999, 3000} {
		sameAt(t, store, pos, k)
	}
	if len(*notes) > 0 {
		t.Errorf("notes: %q", *notes)
	}
}

func TestFoldToPassesOverUnusableCheckpoints(t *testing.T) {
	store, _ := simHistory(t, 2000)
	evs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	other := memstore.New()
	defer other.Close()
	for _, ev := range evs {
		ev.ID[0] ^= 1 // another history of the same length
		if _, err := other.Append(context.Background(), ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		spoil func(t *testing.T, dir string, newest uint64)
		note  string
	}{
		{"a flipped bit", func(t *testing.T, dir string, newest uint64) {
			path := filepath.Join(dir, checkpointName(newest))
			b := read(t, path)
			b[len(b)/2] ^= 0x20
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "checksum mismatch"},
		{"cut short", func(t *testing.T, dir string, newest uint64) {
			path := filepath.Join(dir, checkpointName(newest))
			if err := os.WriteFile(path, read(t, path)[:100], 0o600); err != nil {
				t.Fatal(err)
			}
		}, "cut short"},
		{"of another history", func(t *testing.T, dir string, newest uint64) {
			// The other history's checkpoints in this directory.
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			kept(t, other, dir, projections.KeepPolicy{Every: 300}, 100)
		}, "another history"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			k, _ := kept(t, store, dir, projections.KeepPolicy{Every: 300}, 100)
			ps := k.Positions()
			tc.spoil(t, dir, ps[len(ps)-1])
			var notes []string
			k = projections.NewKeeper(projections.DirCheckpoints(dir), projections.KeepPolicy{}, func(n string) { notes = append(notes, n) })
			sameAt(t, store, 2000, k)
			if len(notes) == 0 || !strings.Contains(notes[0], tc.note) || !strings.Contains(notes[0], "passed over") {
				t.Errorf("notes %q: want one saying %q, passed over", notes, tc.note)
			}
			if _, err := os.Stat(filepath.Join(dir, checkpointName(ps[len(ps)-1]))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the unusable checkpoint is still there (%v)", err)
			}
		})
	}
}

func checkpointName(pos uint64) string { return fmt.Sprintf("%020d.snap", pos) }

func TestMemCheckpointsKeepByCountAndTime(t *testing.T) {
	store, _ := simHistory(t, 2000)
	s := projections.NewMemCheckpointStore()
	// Every event an hour of event time: quiet, so the interval decides.
	k := projections.NewKeeper(s, projections.KeepPolicy{Every: 1 << 40, Interval: time.Minute, MinGap: 500, MaxCount: 3}, nil)
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
	r.Keep(k, set)
	for pos := uint64(100); pos <= 2000; pos += 100 {
		if err := r.CatchUpTo(context.Background(), pos); err != nil {
			t.Fatal(err)
		}
	}
	ps := k.Positions()
	if len(ps) == 0 || len(ps) > 3 || ps[len(ps)-1] != 2000 {
		t.Fatalf("checkpoints at %v: want at most 3, the newest at 2000", ps)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i]-ps[i-1] < 500 {
			t.Errorf("checkpoints %v: two closer than MinGap", ps)
		}
	}
	sameAt(t, store, 1999, k)
}

func TestFoldToOutsideTheHistory(t *testing.T) {
	store, _ := simHistory(t, 100)
	head, err := store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, pos := range []uint64{0, head + 1} {
		if _, _, err := projections.FoldTo(context.Background(), store, events.NewRegistry(), pos, nil); !errors.Is(err, projections.ErrNoMoment) {
			t.Errorf("fold to %d: %v, want ErrNoMoment", pos, err)
		}
	}
}

func TestPositionAt(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	// Event i (1-based) at base+i minutes, but event 6 stamped a minute
	// before event 5 (a clock stepped back).
	mins := []int{1, 2, 3, 4, 5, 4, 7, 8, 9, 10}
	store := memstore.New()
	defer store.Close()
	reg := events.NewRegistry()
	for i, m := range mins {
		ev, err := reg.New("node-n1", events.NodeRegistered{Node: "n1"}, events.Meta{At: base.Add(time.Duration(m) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		ev.ID[15] = byte(i + 1)
		if _, err := store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		at   time.Duration
		want uint64
	}{
		{time.Minute, 1},
		{90 * time.Second, 1},
		{3 * time.Minute, 3},
		{8 * time.Minute, 8},
		{10 * time.Minute, 10},
		{time.Hour, 10},
	}
	for _, tc := range tests {
		got, at, err := projections.PositionAt(ctx, store, base.Add(tc.at))
		if err != nil || got != tc.want || !at.Equal(base.Add(time.Duration(mins[got-1])*time.Minute)) {
			t.Errorf("at +%v: %d (%v), %v; want %d", tc.at, got, at, err, tc.want)
		}
	}
	// Out of order: 4m30s is passed at 4 (4m, then 5m) and at 6 (4m, then
	// 7m); bisection finds one of them, with its time at or before.
	got, at, err := projections.PositionAt(ctx, store, base.Add(270*time.Second))
	if err != nil || (got != 4 && got != 6) || at.After(base.Add(270*time.Second)) {
		t.Errorf("at +4m30s: %d (%v), %v; want 4 or 6", got, at, err)
	}
	if _, _, err := projections.PositionAt(ctx, store, base); !errors.Is(err, projections.ErrNoMoment) {
		t.Errorf("before the first event: %v, want ErrNoMoment", err)
	}
}
