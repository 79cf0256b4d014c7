package storetest

import (
	"errors"
	"testing"

	"meshplane/events"
)

// RunByID checks a store's events.IDReader: each event read back by its
// id alone, with its version and position, whichever stream and however
// far back; an id stored under no event is ErrNotFound (never an empty
// event); a replayed append adds no second entry; a closed store is
// ErrClosed. A store's own test file calls it beside Run:
//
//	func TestReadByID(t *testing.T) { storetest.RunByID(t, factory) }
func RunByID(t *testing.T, f Factory) {
	t.Helper()
	if f.Open == nil {
		t.Fatal("storetest: Factory.Open is nil")
	}
	s := &suite{f: f}
	t.Run("ReadByID", s.testReadByID)
}

func (s *suite) testReadByID(t *testing.T) {
	t.Parallel()
	h := s.open(t)
	r, ok := h.st.(events.IDReader)
	if !ok {
		t.Fatalf("%T does not implement events.IDReader", h.st)
	}
	ctx := ctxFor(t)
	var stored []events.Event
	for range 3 {
		stored = append(stored, mustAppend(t, h.st, "node-a", events.Any, numbered(40, "a")...)...)
		stored = append(stored, mustAppend(t, h.st, "node-b", events.Any, newEvent("test.b", `{"i":1}`))...)
	}
	for _, want := range []events.Event{stored[0], stored[40], stored[len(stored)/2], stored[len(stored)-1]} {
		got, err := r.ReadByID(ctx, want.ID)
		if err != nil {
			t.Fatalf("ReadByID(%s) at position %d: %v", want.ID, want.Position, err)
		}
		if !got.SameContent(want) || got.Version != want.Version || got.Position != want.Position {
			t.Errorf("ReadByID(%s) = %v %s, want %v %s", want.ID, got, got.Data, want, want.Data)
		}
	}
	// A replayed append keeps the one entry: the first event's position.
	mustAppend(t, h.st, "node-a", events.Any, stored[0])
	if got, err := r.ReadByID(ctx, stored[0].ID); err != nil || got.Position != stored[0].Position {
		t.Errorf("ReadByID after a replay = %v, %v; want position %d", got, err, stored[0].Position)
	}
	missing := events.NewID()
	if got, err := r.ReadByID(ctx, missing); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("ReadByID(never stored) = %v, %v; want ErrNotFound", got, err)
	}
	if err := h.st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := r.ReadByID(ctx, stored[0].ID); !errors.Is(err, events.ErrClosed) {
		t.Errorf("ReadByID after Close: %v, want ErrClosed", err)
	}
}
