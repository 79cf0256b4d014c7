package controllerd

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
)

// syncBuffer is a bytes.Buffer safe for the logger's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestLogChainHead: the head is logged at once and on every tick, as the
// line mesh store head prints, and follows the store's appends; the loop
// stops with its context.
func TestLogChainHead(t *testing.T) {
	store := memstore.New()
	defer store.Close()
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := logChainHead(ctx, store, 20*time.Millisecond, log)
	wait := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait(`head="meshplane-head position=0 chain=sha256:`)
	ev := events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1, At: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), Data: []byte(`{"node":"n1"}`)}
	if _, err := store.Append(ctx, "node-n1", events.NoStream, ev); err != nil {
		t.Fatal(err)
	}
	h, err := store.ChainHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait(`head="` + h.String() + `"`)
	if _, err := events.ParseChainHead(h.String()); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not stop with its context")
	}
}
