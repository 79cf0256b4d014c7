package storeverify_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/agent"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/storeverify"
)

// dataDir is a data directory whose bolt store holds one event.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1, Data: []byte(`{"node":"a"}`)}
	if _, err := s.Append(context.Background(), "node-a", events.Any, ev); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestData(t *testing.T) {
	ctx := context.Background()
	sound := dataDir(t)
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "events.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		err       error  // of the report
		says      string // in its text
		caches    int
	}{
		{"sound, no caches yet", sound, nil, "no damage found", 2},
		{"empty file", empty, storeverify.ErrStoreDamaged, "cache files: not checked", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := storeverify.Data(ctx, tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			rep.WriteText(&b)
			if !errors.Is(rep.Err(), tc.err) || (tc.err == nil) != (rep.Err() == nil) || !strings.Contains(b.String(), tc.says) || len(rep.Caches) != tc.caches {
				t.Errorf("Err %v, %d cache report(s), text:\n%s\nwant %v, %d, saying %q", rep.Err(), len(rep.Caches), b.String(), tc.err, tc.caches, tc.says)
			}
		})
	}
	if _, err := storeverify.Data(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no event store at") {
		t.Errorf("no store: %v", err)
	}
}

func TestAgent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outbox")
	box, err := agent.OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := box.Put(agent.Report{Outcome: events.ApplyReported{Node: "n1", Declaration: "n1/1", ApplyID: events.NewID().String()}}); err != nil {
		t.Fatal(err)
	}
	rep, err := storeverify.Agent(dir)
	if err != nil || rep.Err() != nil || rep.Reports != 1 {
		t.Fatalf("a sound outbox: %+v %v", rep, err)
	}
	// A bit flipped in the report's record (the log's second line).
	path := filepath.Join(dir, "outbox.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.IndexByte(b, '\n')
	b[first+(len(b)-first)/2] ^= 4
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err = storeverify.Agent(dir); err != nil || !errors.Is(rep.Err(), storeverify.ErrAgentDataDamaged) ||
		len(rep.Damaged) != 1 || !strings.HasPrefix(rep.Damaged[0], "outbox.log: line 2 ") {
		t.Errorf("a damaged report: %+v %v", rep, err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, b) {
		t.Errorf("verify changed the log: %v", err)
	}
	if _, err := storeverify.Agent(filepath.Join(t.TempDir(), "outbox")); err == nil || !strings.Contains(err.Error(), "no agent outbox at") {
		t.Errorf("no outbox: %v", err)
	}
}
