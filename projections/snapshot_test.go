package projections_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
)

// prefix is a store holding the first n events of evs, as they are.
func prefix(t *testing.T, evs []events.Event, n int) *memstore.Store {
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

// small folds the small projections of a new set from store, from the
// snapshot at path when load is set.
func small(t *testing.T, store events.Store, path string, load bool) (*projections.Set, *projections.Runner, uint64) {
	t.Helper()
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.Small()...)
	var from uint64
	if load {
		var err error
		if from, err = projections.LoadSnapshot(context.Background(), path, r, set); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	if err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	return set, r, from
}

// sameState fails unless every small projection of a and b, and their
// runners' counters, serialize alike.
func sameState(t *testing.T, a, b *projections.Set, ra, rb *projections.Runner) {
	t.Helper()
	ja, err := projections.Snapshot(a.Churn, a.Status, a.Holds)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := projections.Snapshot(b.Churn, b.Status, b.Holds)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ja, jb) {
		t.Errorf("projections differ:\n%.600s\nwant\n%.600s", jb, ja)
	}
	sameRoster(t, a.Roster, b.Roster)
	if ra.Position() != rb.Position() {
		t.Errorf("position %d, want %d", rb.Position(), ra.Position())
	}
	ka, na := ra.Failures()
	kb, nb := rb.Failures()
	if na != nb || len(ka) != len(kb) {
		t.Errorf("failures %d (%d kept), want %d (%d kept)", nb, len(kb), na, len(ka))
	}
}

// sameRoster fails unless got answers as want: the same current
// declaration of every node, and the same history unless got's was trimmed
// by a snapshot (ErrTrimmed).
func sameRoster(t *testing.T, want, got *projections.Roster) {
	t.Helper()
	if !slices.Equal(want.Nodes(), got.Nodes()) {
		t.Fatalf("roster nodes %v, want %v", got.Nodes(), want.Nodes())
	}
	for _, n := range want.Nodes() {
		a, _ := want.Current(n)
		b, err := got.Current(n)
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("current declaration of %s: %+v, %v; want %+v", n, b, err, a)
		}
		ha, _ := want.History(n)
		hb, err := got.History(n)
		if err != nil && !errors.Is(err, projections.ErrTrimmed) || err == nil && !reflect.DeepEqual(ha, hb) {
			t.Errorf("history of %s: %d declarations, %v; want %d", n, len(hb), err, len(ha))
		}
	}
}

func TestSnapshotRoundTripEqualsRebuild(t *testing.T) {
	store, _ := simHistory(t, 3000)
	path := filepath.Join(t.TempDir(), "projections.snap")
	want, rw, _ := small(t, store, path, false)
	if err := projections.SaveSnapshot(context.Background(), path, rw, want); err != nil {
		t.Fatal(err)
	}
	got, rg, from := small(t, store, path, true)
	if from != rw.Position() || from == 0 {
		t.Errorf("loaded at %d, want %d", from, rw.Position())
	}
	sameState(t, want, got, rw, rg)
	// A snapshot of a loaded snapshot is the same file.
	again := filepath.Join(t.TempDir(), "again.snap")
	if err := projections.SaveSnapshot(context.Background(), again, rg, got); err != nil {
		t.Fatal(err)
	}
	if a, b := read(t, path), read(t, again); !bytes.Equal(a, b) {
		t.Errorf("a loaded snapshot saves %d bytes, the original %d (or other bytes)", len(b), len(a))
	}
}

func TestSnapshotBehindCatchesUp(t *testing.T) {
	store, _ := simHistory(t, 3000)
	evs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 1000, len(evs) - 1} {
		path := filepath.Join(t.TempDir(), "projections.snap")
		set := projections.New()
		before := projections.NewRunner(prefix(t, evs, n), events.NewRegistry(), set.Small()...)
		if err := before.CatchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := projections.SaveSnapshot(context.Background(), path, before, set); err != nil {
			t.Fatal(err)
		}
		want, rw, _ := small(t, store, path, false)
		got, rg, from := small(t, store, path, true)
		if from != uint64(n) {
			t.Errorf("snapshot of %d events loaded at %d", n, from)
		}
		sameState(t, want, got, rw, rg)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSnapshotUnusableIsRefused(t *testing.T) {
	store, _ := simHistory(t, 2000)
	evs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.snap")
	set, r, _ := small(t, store, good, false)
	if err := projections.SaveSnapshot(context.Background(), good, r, set); err != nil {
		t.Fatal(err)
	}
	b := read(t, good)
	flip := func(i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 0x20
		return c
	}
	version := bytes.Clone(b)
	binary.BigEndian.PutUint32(version[8:], 99)
	other := memstore.New()
	defer other.Close()
	for _, ev := range evs {
		ev.ID[0] ^= 1 // another history of the same length
		if _, err := other.Append(context.Background(), ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		file    []byte
		store   events.Store
		damaged bool // the error wraps events.ErrDamaged too
	}{
		{"a flipped bit in the body", flip(len(b) / 2), store, true},
		{"a flipped bit in the checksum", flip(len(b) - 1), store, true},
		{"a flipped bit in the length", flip(19), store, true},
		{"truncated", b[:len(b)-10], store, true},
		{"empty", nil, store, true},
		{"not a snapshot", []byte("{\"status\": {}}"), store, true},
		{"another format version", version, store, false},
		{"a store behind the snapshot", b, prefix(t, evs, 10), false},
		{"a store of another history", b, other, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "projections.snap")
			if err := os.WriteFile(path, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			set := projections.New()
			r := projections.NewRunner(tc.store, events.NewRegistry(), set.Small()...)
			pos, err := projections.LoadSnapshot(context.Background(), path, r, set)
			if !errors.Is(err, projections.ErrSnapshot) {
				t.Fatalf("load: %v, want ErrSnapshot", err)
			}
			if errors.Is(err, events.ErrDamaged) != tc.damaged {
				t.Errorf("load: %v: wraps ErrDamaged %v, want %v", err, !tc.damaged, tc.damaged)
			}
			if pos != 0 || r.Position() != 0 || len(set.Status.Nodes()) != 0 {
				t.Errorf("a refused snapshot left position %d/%d and %d nodes", pos, r.Position(), len(set.Status.Nodes()))
			}
			// Ignored, the projections rebuild from 0 and equal a rebuild.
			if err := r.CatchUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := projections.New()
			rw := projections.NewRunner(tc.store, events.NewRegistry(), want.Small()...)
			if err := rw.CatchUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			sameState(t, want, set, rw, r)
		})
	}
	t.Run("no file", func(t *testing.T) {
		set := projections.New()
		r := projections.NewRunner(store, events.NewRegistry(), set.Small()...)
		if _, err := projections.LoadSnapshot(context.Background(), filepath.Join(dir, "none"), r, set); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("load: %v, want os.ErrNotExist", err)
		}
	})
}

// The extra a snapshot is saved with comes back with it; one saved without
// has none, and extra that is not JSON is refused.
func TestSnapshotExtra(t *testing.T) {
	ctx := context.Background()
	store, _ := simHistory(t, 300)
	path := filepath.Join(t.TempDir(), "projections.snap")
	set, r, _ := small(t, store, path, false)
	for _, extra := range []json.RawMessage{nil, json.RawMessage(`{"timeline.db":{"size":12}}`)} {
		if err := projections.SaveSnapshotWith(ctx, path, r, set, extra); err != nil {
			t.Fatal(err)
		}
		got := projections.New()
		pos, back, err := projections.LoadSnapshotWith(ctx, path, projections.NewRunner(store, events.NewRegistry(), got.Small()...), got)
		if err != nil || pos != r.Position() || !bytes.Equal(back, extra) {
			t.Errorf("saved with %s: loaded %s at %d (%v)", extra, back, pos, err)
		}
	}
	if err := projections.SaveSnapshotWith(ctx, path, r, set, json.RawMessage(`{half`)); err == nil {
		t.Error("extra that is not JSON was saved")
	}
}

// TestSnapshotTrimmedDeclarationNamedLater: a snapshot keeps each node's
// latest declarations only; an event after it naming an older one makes the
// set Incomplete (the caller rebuilds), and the roster says ErrTrimmed for
// what it no longer holds.
func TestSnapshotTrimmedDeclarationNamedLater(t *testing.T) {
	defer projections.SetSnapKeep(2)()
	store, _ := simHistory(t, 1500)
	evs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "projections.snap")
	set, r, _ := small(t, store, path, false)
	if err := projections.SaveSnapshot(context.Background(), path, r, set); err != nil {
		t.Fatal(err)
	}
	// A late report of node-001's first declaration.
	var first events.Event
	for _, ev := range evs {
		if ev.Type == events.TypeApplyReported && ev.Stream == "node-node-001" {
			first = ev
			break
		}
	}
	if first.Type == "" {
		t.Fatal("no apply on node-001")
	}
	first.ID = [16]byte{1, 2, 3}
	if _, err := store.Append(context.Background(), first.Stream, events.Any, first); err != nil {
		t.Fatal(err)
	}
	got, _, _ := small(t, store, path, true)
	if !got.Incomplete() {
		t.Error("a report naming a trimmed declaration left the set complete")
	}
	if _, err := got.Roster.History("node-001"); !errors.Is(err, projections.ErrTrimmed) {
		t.Errorf("history of a trimmed roster: %v, want ErrTrimmed", err)
	}
	whole, _, _ := small(t, store, path, false)
	if whole.Incomplete() {
		t.Error("a rebuild is incomplete")
	}
}
