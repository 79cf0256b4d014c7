package docker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/declaration"
)

// TestLogsOfAManagedContainer: a managed container's log on the engine,
// its tail bounded (the last lines kept, cut said), a follow that waits and
// answers with what came after the cursor; a container of no node's, or
// none, is not found.
func TestLogsOfAManagedContainer(t *testing.T) {
	r := newRT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// cat of a missing file: one line on stderr, then the engine restarts
	// it (unless-stopped): a line each restart.
	loop := agent.Container{Name: "loop", Module: "forge", Spec: declaration.Container{Image: testRef, Command: []string{"cat", "/no/such/file"}}}
	if err := r.CreateContainer(ctx, loop); err != nil {
		t.Fatal(err)
	}
	if err := r.RunUnmanaged("stranger", testRef); err != nil {
		t.Fatal(err)
	}
	var first agent.LogChunk
	for deadline := time.Now().Add(30 * time.Second); ; {
		ch, err := agent.Logs(ctx, r, agent.LogRequest{Container: "loop", LogQuery: agent.LogQuery{Tail: 10}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(ch.Data), "no such file") >= 2 {
			first = ch
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two lines of the crash loop in 30 s: %q", ch.Data)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if first.Cursor.IsZero() || strings.Contains(string(first.Data), "Z open") {
		t.Errorf("cursor %v, data %q: want a cursor and no timestamps", first.Cursor, first.Data)
	}
	line := strings.SplitAfter(string(first.Data), "\n")[0]

	// A tail of one line's bytes keeps the last line and says it cut.
	ch, err := agent.Logs(ctx, r, agent.LogRequest{Container: "loop", LogQuery: agent.LogQuery{Tail: 10, MaxBytes: len(line)}})
	if err != nil || string(ch.Data) != line || !ch.Cut {
		t.Errorf("bounded tail: %q cut %v, %v; want %q, cut", ch.Data, ch.Cut, err, line)
	}

	// Following: the lines after the cursor, waited for.
	next, err := agent.Logs(ctx, r, agent.LogRequest{Container: "loop", LogQuery: agent.LogQuery{Since: first.Cursor, WaitMillis: 15000}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(next.Data), "no such file") || !next.Cursor.After(first.Cursor) {
		t.Errorf("follow: %q up to %v; want a new line after %v", next.Data, next.Cursor, first.Cursor)
	}

	for _, name := range []string{"stranger", "nobody"} {
		if _, err := agent.Logs(ctx, r, agent.LogRequest{Container: name}); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("logs of %s: %v, want not found", name, err)
		}
	}
}
