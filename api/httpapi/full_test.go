package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
)

// fullStore is a store whose disk fills when full is set: its appends
// fail as a store's do on ENOSPC, wrapping events.ErrStoreFull and the
// cause, and write nothing.
type fullStore struct {
	*memstore.Store
	full atomic.Bool
}

func (s *fullStore) Append(ctx context.Context, stream string, expected events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	if s.full.Load() {
		return nil, fmt.Errorf("teststore: append %s: %w: %w", stream, events.ErrStoreFull,
			&fs.PathError{Op: "write", Path: "events.db", Err: syscall.ENOSPC})
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

// TestStoreFullIs507: a write whose store is out of space is answered
// 507 Insufficient Storage, code store-full, naming the cause (not 500
// internal); the client's error is events.ErrStoreFull, as the
// controller's was; nothing was written, and the same request succeeds
// once there is room.
func TestStoreFullIs507(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	store := &fullStore{Store: memstore.New()}
	ctrl, err := controller.New(controller.Config{Store: store, Publisher: &fakeBus{}, Ticks: make(chan time.Time), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	srv := httptest.NewServer(httpapi.Handler(ctrl, token))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller stopped with %v", err)
		}
		store.Close()
	})
	client, err := httpapi.NewClient(srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	req := api.RegisterNodesRequest{Operator: "tester", Nodes: []string{"n1"}}

	store.full.Store(true)
	_, err = client.RegisterNodes(ctx, req)
	var he *httpapi.Error
	switch {
	case !errors.As(err, &he):
		t.Fatalf("register on a full store: %v (%T), want an *httpapi.Error", err, err)
	case he.Status != http.StatusInsufficientStorage || he.Code != api.CodeStoreFull:
		t.Fatalf("register on a full store: %d %s, want 507 %s: %v", he.Status, he.Code, api.CodeStoreFull, err)
	case !errors.Is(err, events.ErrStoreFull):
		t.Errorf("the client's error %v is not events.ErrStoreFull", err)
	case !strings.Contains(he.Message, "no space left on device"):
		t.Errorf("message %q does not name the cause", he.Message)
	}
	if h, err := store.Head(ctx); err != nil || h != 0 {
		t.Fatalf("head %d, %v after a full store's refusal: want nothing written", h, err)
	}

	store.full.Store(false)
	if _, err := client.RegisterNodes(ctx, req); err != nil {
		t.Fatalf("register once there is room: %v", err)
	}
}
