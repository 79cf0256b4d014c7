package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
	"meshplane/projections/snapstore"
	"meshplane/session"
	"meshplane/sim"
)

// simHistory is every event of a generated mesh of about n events.
func simHistory(t *testing.T, n uint64) []events.Event {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, n); err != nil {
		t.Fatal(err)
	}
	evs, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// appendBolt appends evs to the bolt store in dir, a window of 256 at a
// time, each window's streams in one append each (one commit per stream
// and window instead of one per event; each stream keeps its order).
func appendBolt(t *testing.T, dir string, evs []events.Event) {
	t.Helper()
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < len(evs); i += 256 {
		var order []string
		by := map[string][]events.Event{}
		for _, ev := range evs[i:min(i+256, len(evs))] {
			if by[ev.Stream] == nil {
				order = append(order, ev.Stream)
			}
			by[ev.Stream] = append(by[ev.Stream], ev)
		}
		for _, stream := range order {
			if _, err := s.Append(ctx, stream, events.Any, by[stream]...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// smallSnapshots makes local queries save their snapshot when they find
// more than 50 new events (instead of 1,024), for small test stores; it
// returns the restore.
func smallSnapshots() func() {
	was := snapshotOptions
	snapshotOptions = snapstore.Options{FlushEvery: 200, FlushAfter: 50}
	return func() { snapshotOptions = was }
}

// queryCases are the queries that resume from the snapshot, on the
// generated mesh.
var queryCases = [][]string{
	{"status", "-o", "json"},
	{"status"},
	{"node", "show", "node-001", "-o", "json"},
	{"timeline", "--node", "node-001", "--limit", "50", "-o", "json"},
	{"timeline", "--node", "node-003", "--type", "apply.reported", "--limit", "20"},
	{"timeline", "--module", "mod-002"},
	{"churn", "-o", "json"},
}

// answers runs every query case with flags and returns their stdout.
func answers(t *testing.T, flags ...string) []string {
	t.Helper()
	out := make([]string, len(queryCases))
	for i, args := range queryCases {
		code, stdout, stderr := mesh(t, append(append([]string(nil), args...), flags...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		out[i] = stdout
	}
	return out
}

// sameAnswers compares the local answers with those of a controller over
// the same store (projections folded from 0 in memory).
func sameAnswers(t *testing.T, dir string, local []string) {
	t.Helper()
	srv := startServer(t, dir)
	remote := answers(t, srv.flags()...)
	srv.stop()
	for i := range local {
		if local[i] != remote[i] {
			t.Errorf("%s: the local answer differs from the controller's:\n--- local\n%s\n--- controller\n%s",
				strings.Join(queryCases[i], " "), local[i], remote[i])
		}
	}
}

// resumedFrom opens a local query session on dir as the queries do and
// returns the position its projections were loaded at.
func resumedFrom(t *testing.T, dir string) uint64 {
	t.Helper()
	s, err := target{Target: session.Target{Data: dir}, resume: true}.open(context.Background(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Snapshot == nil {
		t.Fatal("a local query session without a snapshot")
	}
	return s.Snapshot.From
}

// A local query after new appends sees them: it resumes from the snapshot
// the call before saved and folds what was appended since, and answers as
// a controller folding every event from 0 does.
func TestLocalQueriesResumeAndCatchUp(t *testing.T) {
	defer smallSnapshots()()
	evs := simHistory(t, 720)
	dir := t.TempDir()
	appendBolt(t, dir, evs[:400])

	// No snapshot yet: the first call folds from 0, says so, and saves one.
	code, _, stderr := mesh(t, "status", "--data", dir)
	if code != exitOK || !strings.Contains(stderr, "no snapshot") {
		t.Fatalf("first status: exit %d, stderr %q; want a note that there was no snapshot", code, stderr)
	}
	for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("the first call saved no %s: %v", name, err)
		}
	}
	if from := resumedFrom(t, dir); from == 0 {
		t.Fatalf("a call after the first folded from 0")
	}
	sameAnswers(t, dir, answers(t, "--data", dir))

	// Appends after the snapshot: seen at once, then saved.
	for _, part := range [][]events.Event{evs[400:420], evs[420:]} {
		appendBolt(t, dir, part)
		local := answers(t, "--data", dir)
		if code, _, stderr := mesh(t, "status", "--data", dir); code != exitOK || stderr != "" {
			t.Errorf("status after appends: exit %d, stderr %q; want no note", code, stderr)
		}
		sameAnswers(t, dir, local)
	}
	if from := resumedFrom(t, dir); from <= 400 {
		t.Errorf("after 300 events appended, calls resume from %d; want the snapshot saved past 400", from)
	}

	// why and roster history fold from 0, and answer.
	for _, args := range [][]string{{"why", "node-001", "mod-000-c0"}, {"roster", "--history", "node-001"}} {
		if code, out, stderr := mesh(t, append(args, "--data", dir)...); code != exitOK && code != exitRejected {
			t.Errorf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
}

// A snapshot that is damaged, of another store, or missing is passed over
// with a note on stderr: the call folds every event from 0 and answers as
// the controller does, never from the bad snapshot.
func TestLocalQueriesPassOverABadSnapshot(t *testing.T) {
	defer smallSnapshots()()
	evs := simHistory(t, 600)
	other := t.TempDir()
	appendBolt(t, other, evs[:250])
	if code, _, stderr := mesh(t, "status", "--data", other); code != exitOK {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	tests := []struct {
		name  string
		spoil func(t *testing.T, dir string)
		note  string
	}{
		{"damaged", func(t *testing.T, dir string) {
			path := filepath.Join(dir, snapstore.SnapshotFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x10
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "folding from position 0"},
		{"of another store", func(t *testing.T, dir string) {
			for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
				b, err := os.ReadFile(filepath.Join(other, name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}, "another history"},
		{"missing", func(t *testing.T, dir string) {
			for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}, "no snapshot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			appendBolt(t, dir, evs[:300])
			if code, _, stderr := mesh(t, "status", "--data", dir); code != exitOK {
				t.Fatalf("status: exit %d: %s", code, stderr)
			}
			appendBolt(t, dir, evs[300:])
			tc.spoil(t, dir)
			code, out, stderr := mesh(t, "status", "-o", "json", "--data", dir)
			if code != exitOK || !strings.Contains(stderr, "mesh: note: ") || !strings.Contains(stderr, tc.note) {
				t.Fatalf("status over a %s snapshot: exit %d, stderr %q; want a note saying %q", tc.name, code, stderr, tc.note)
			}
			local := answers(t, "--data", dir)
			if local[0] != out {
				t.Errorf("status after the fold from 0 differs from the call that folded")
			}
			sameAnswers(t, dir, local)
		})
	}
}
