package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/export"
	"meshplane/events/memstore"
	"meshplane/replay"
	"meshplane/sim"
)

// TestReplayAControllersHistory: a history that starts as every
// controller's does, with the bootstrap token.created, replays and
// agrees. Before, its first line was refused ("token.created names no
// node and no module"), so no controller's history replayed.
func TestReplayAControllersHistory(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	sum := strings.Repeat("ab", 32)
	ev, err := events.NewRegistry().New(events.TokenStream("admin"), events.TokenCreated{Name: "admin", TokenID: sum[:16], SecretSHA256: sum, By: "controller"},
		events.Meta{ID: events.NewID(), At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Actor: "controller"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
		t.Fatal(err)
	}
	r, err := sim.NewRun(ctx, store, sim.Config{Nodes: 3, Modules: 4, Passes: 4, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Passes(ctx); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
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
		t.Fatalf("replay of a controller's history: %v", err)
	}
	if !rep.Agree {
		t.Fatalf("the runs diverge: %+v", rep)
	}
}
