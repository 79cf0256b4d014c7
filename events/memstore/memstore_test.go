package memstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/events/storetest"
)

func open(testing.TB) events.Store { return memstore.New() }

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Factory{Open: open})
}

func BenchmarkMemstore(b *testing.B) {
	storetest.Bench(b, storetest.Factory{Open: open})
}

func TestWithClock(t *testing.T) {
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.FixedZone("CEST", 2*60*60))
	st := memstore.New(memstore.WithClock(func() time.Time { return at }))
	defer st.Close()
	got, err := st.Append(context.Background(), "node-novox", events.NoStream,
		events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].At.Equal(at) || got[0].At.Location() != time.UTC {
		t.Errorf("event without At dated %s (%s), want the clock's %s in UTC", got[0].At, got[0].At.Location(), at)
	}
}

func TestWithFault(t *testing.T) {
	errDown := errors.New("store unreachable")
	// Fails reads of node-g14, and every append while down is set.
	down := false
	fault := func(op memstore.Op, stream string) error {
		if (op == memstore.OpReadStream && stream == "node-g14") || (op == memstore.OpAppend && down) {
			return errDown
		}
		return nil
	}
	ctx := context.Background()
	st := memstore.New(memstore.WithFault(fault))
	defer st.Close()
	other := memstore.New() // no hidden globals: a second store is not affected
	defer other.Close()
	ev := func() events.Event {
		return events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1}
	}
	for _, s := range []*memstore.Store{st, other} {
		for _, stream := range []string{"node-g14", "node-novox"} {
			if _, err := s.Append(ctx, stream, events.NoStream, ev()); err != nil {
				t.Fatalf("Append(%s): %v", stream, err)
			}
		}
	}
	cases := []struct {
		name  string
		store *memstore.Store
		call  func(*memstore.Store) error
		fails bool
	}{
		{"read of the failing stream", st, func(s *memstore.Store) error {
			_, err := s.ReadStream(ctx, "node-g14", 0, 0)
			return err
		}, true},
		{"read of another stream", st, func(s *memstore.Store) error {
			_, err := s.ReadStream(ctx, "node-novox", 0, 0)
			return err
		}, false},
		{"read all", st, func(s *memstore.Store) error { _, err := s.ReadAll(ctx, 0, 0); return err }, false},
		{"the same read of another store", other, func(s *memstore.Store) error {
			_, err := s.ReadStream(ctx, "node-g14", 0, 0)
			return err
		}, false},
		{"append while down", st, func(s *memstore.Store) error {
			down = true
			defer func() { down = false }()
			_, err := s.Append(ctx, "node-novox", events.Any, ev())
			return err
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head, _ := tc.store.Head(ctx)
			err := tc.call(tc.store)
			if tc.fails != errors.Is(err, errDown) {
				t.Errorf("got %v, want the fault: %v", err, tc.fails)
			}
			if tc.fails && !strings.HasPrefix(err.Error(), "memstore: ") {
				t.Errorf("fault not wrapped with context: %q", err)
			}
			if after, _ := tc.store.Head(ctx); after != head {
				t.Errorf("head moved from %d to %d", head, after)
			}
		})
	}
}
