package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"meshplane/events"
)

// testSubscribe: catch-up from any position, then live events, and the
// three ways a subscription ends (fn's error, ctx, Close).
func (s *suite) testSubscribe(t *testing.T) {
	t.Run("catch-up then live", func(t *testing.T) {
		for _, after := range []uint64{0, 1, 3, 5} {
			t.Run(fmt.Sprintf("after %d", after), func(t *testing.T) {
				t.Parallel()
				s.subscribeFrom(t, after)
			})
		}
	})
	t.Run("fn error stops it", func(t *testing.T) {
		t.Parallel()
		st := s.open(t).st
		mustAppend(t, st, "node-a", events.NoStream, numbered(4, "a")...)
		errStop := errors.New("projection failed")
		calls := 0
		err := st.Subscribe(ctxFor(t), 0, func(e events.Event) error {
			calls++
			if e.Position == 2 {
				return errStop
			}
			return nil
		})
		if !errors.Is(err, errStop) {
			t.Errorf("Subscribe: got %v, want fn's error", err)
		}
		if calls != 2 {
			t.Errorf("fn called %d times, want 2 (stopped at position 2)", calls)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		st := s.open(t).st
		mustAppend(t, st, "node-a", events.NoStream, numbered(2, "a")...)
		ctx, cancel := context.WithCancel(ctxFor(t))
		done := make(chan error, 1)
		caughtUp := make(chan struct{})
		go func() {
			done <- st.Subscribe(ctx, 0, func(e events.Event) error {
				if e.Position == 2 {
					close(caughtUp)
				}
				return nil
			})
		}()
		waitFor(t, caughtUp, "the subscription to catch up")
		cancel()
		if err := waitErr(t, done, "Subscribe to return after cancel"); !errors.Is(err, context.Canceled) {
			t.Errorf("Subscribe after cancel: got %v, want context.Canceled", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		st := s.open(t).st
		ctx, cancel := context.WithTimeout(ctxFor(t), 50*time.Millisecond)
		defer cancel()
		err := st.Subscribe(ctx, 0, func(events.Event) error { return nil })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Subscribe past its deadline: got %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("close unblocks it", func(t *testing.T) {
		t.Parallel()
		st := s.open(t).st
		mustAppend(t, st, "node-a", events.NoStream, numbered(1, "a")...)
		done := make(chan error, 1)
		caughtUp := make(chan struct{})
		go func() {
			done <- st.Subscribe(ctxFor(t), 0, func(events.Event) error { close(caughtUp); return nil })
		}()
		waitFor(t, caughtUp, "the subscription to catch up")
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := waitErr(t, done, "Subscribe to return after Close"); !errors.Is(err, events.ErrClosed) {
			t.Errorf("Subscribe after Close: got %v, want ErrClosed", err)
		}
	})
}

// subscribeFrom stores five events, subscribes after the given position, and
// once the subscription has caught up appends two more: it must see exactly
// the positions after..7, in order.
func (s *suite) subscribeFrom(t *testing.T, after uint64) {
	const stored, live = 5, 2
	st := s.open(t).st
	mustAppend(t, st, "node-a", events.NoStream, numbered(3, "a")...)
	mustAppend(t, st, "node-b", events.NoStream, numbered(2, "b")...)
	want := mustReadAll(t, st)[after:]

	errEnough := errors.New("enough")
	caughtUp := make(chan struct{})
	done := make(chan error, 1)
	var got []events.Event
	go func() {
		done <- st.Subscribe(ctxFor(t), after, func(e events.Event) error {
			got = append(got, e)
			if e.Position == stored {
				close(caughtUp)
			}
			if e.Position == stored+live {
				return errEnough
			}
			return nil
		})
	}()
	if after < stored {
		waitFor(t, caughtUp, "the subscription to catch up")
	}
	// With nothing to catch up on, the live events may land before or after
	// Subscribe starts waiting; either way they must be delivered.
	want = append(want, mustAppend(t, st, "node-a", events.Exactly(3), numbered(1, "live")...)...)
	want = append(want, mustAppend(t, st, "node-c", events.NoStream, numbered(1, "live")...)...)
	if err := waitErr(t, done, "the live events"); !errors.Is(err, errEnough) {
		t.Fatalf("Subscribe(after %d): got %d events, then %v", after, len(got), err)
	}
	checkEvents(t, fmt.Sprintf("Subscribe(after %d)", after), got, want)
}

// testConcurrentSameStream: writers race on one stream with read, append
// Exactly(v), retry loops. Every version has one winner, no update is lost,
// and the stream ends at the number of successful appends.
func (s *suite) testConcurrentSameStream(t *testing.T) {
	t.Parallel()
	const writers, each = 16, 8
	st := s.open(t).st
	ctx := ctxFor(t)
	won := make([][]uint64, writers) // the versions each writer won
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			var known uint64
			for seq := 1; seq <= each; {
				page, err := st.ReadStream(ctx, "counter", known, 0)
				if err != nil {
					t.Errorf("writer %d: ReadStream: %v", w, err)
					return
				}
				if len(page) > 0 {
					known = page[len(page)-1].Version
				}
				e := newEvent("test.increment", fmt.Sprintf(`{"writer":%d,"seq":%d}`, w, seq))
				got, err := st.Append(ctx, "counter", events.Exactly(known), e)
				switch {
				case errors.Is(err, events.ErrWrongExpectedVersion):
					continue // lost the race: read again
				case err != nil:
					t.Errorf("writer %d: Append: %v", w, err)
					return
				}
				if got[0].Version != known+1 {
					t.Errorf("writer %d: Append(Exactly(%d)) stored version %d", w, known, got[0].Version)
				}
				won[w] = append(won[w], got[0].Version)
				known = got[0].Version
				seq++
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	const total = writers * each
	winner := map[uint64]int{}
	for w, vs := range won {
		for _, v := range vs {
			if other, dup := winner[v]; dup {
				t.Errorf("version %d won by writers %d and %d", v, other, w)
			}
			winner[v] = w
		}
	}
	if len(winner) != total {
		t.Errorf("%d versions won, want %d", len(winner), total)
	}
	evs := mustReadStream(t, st, "counter")
	if len(evs) != total {
		t.Fatalf("stream has %d events after %d successful appends", len(evs), total)
	}
	next := make([]int, writers) // each writer's next seq
	for i, e := range evs {
		var d struct{ Writer, Seq int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if e.Version != uint64(i+1) {
			t.Errorf("event %d at version %d", i, e.Version)
		}
		if winner[e.Version] != d.Writer {
			t.Errorf("version %d holds writer %d's event, won by writer %d", e.Version, d.Writer, winner[e.Version])
		}
		if next[d.Writer]++; d.Seq != next[d.Writer] {
			t.Errorf("version %d: writer %d seq %d, want seq %d (lost or repeated update)", e.Version, d.Writer, d.Seq, next[d.Writer])
		}
	}
	if h := mustHead(t, st); h != total {
		t.Errorf("Head %d, want %d", h, total)
	}
}

// testConcurrentStreamsWithSubscriber: writers append to their own streams
// while a subscriber reads from 0; it sees every event once, in position
// order with no gap, and each stream in version order.
func (s *suite) testConcurrentStreamsWithSubscriber(t *testing.T) {
	t.Parallel()
	const writers, each = 16, 20
	const total = writers * each
	st := s.open(t).st
	ctx := ctxFor(t)

	errEnough := errors.New("enough")
	var got []events.Event
	subscribed := make(chan error, 1)
	go func() {
		subscribed <- st.Subscribe(ctx, 0, func(e events.Event) error {
			got = append(got, e)
			if len(got) == total {
				return errEnough
			}
			return nil
		})
	}()

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			stream := fmt.Sprintf("node-w%02d", w)
			evs := numbered(each, stream)
			for i := 0; i < each; {
				n := 1 + i%2 // batches of one and two
				n = min(n, each-i)
				if _, err := st.Append(ctx, stream, events.Exactly(uint64(i)), evs[i:i+n]...); err != nil {
					t.Errorf("writer %d: Append: %v", w, err)
					return
				}
				i += n
			}
		})
	}
	wg.Wait()
	if err := waitErr(t, subscribed, "the subscriber to see every event"); !errors.Is(err, errEnough) {
		t.Fatalf("Subscribe: got %d of %d events, then %v", len(got), total, err)
	}
	seen := map[string]bool{}
	streamAt := map[string]uint64{}
	for i, e := range got {
		if e.Position != uint64(i+1) {
			t.Fatalf("event %d delivered at position %d: a gap or a repeat", i, e.Position)
		}
		if seen[e.ID.String()] {
			t.Errorf("event %s delivered twice", e.ID)
		}
		seen[e.ID.String()] = true
		if streamAt[e.Stream]++; e.Version != streamAt[e.Stream] {
			t.Errorf("%s delivered at version %d, want %d", e.Stream, e.Version, streamAt[e.Stream])
		}
	}
	if len(streamAt) != writers {
		t.Errorf("%d streams delivered, want %d", len(streamAt), writers)
	}
	checkEvents(t, "Subscribe against ReadAll", got, mustReadAll(t, st))
}

// testReopen: a persistent store keeps everything across a reopen: events,
// versions, positions, and ids for idempotence.
func (s *suite) testReopen(t *testing.T) {
	if s.f.Reopen == nil {
		t.Skip("store does not persist (Factory.Reopen is nil)")
	}
	t.Parallel()
	h := s.open(t)
	a := numbered(3, "a")
	unknown := newEvent("future.thing-happened", "{ \"kept\" :\n true }")
	unknown.Schema = 4
	bare := events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1}
	mustAppend(t, h.st, "node-a", events.NoStream, a...)
	mustAppend(t, h.st, "node-b", events.NoStream, unknown, bare)
	mustAppend(t, h.st, "node-a", events.Exactly(3), numbered(1, "a2")...)
	before := mustReadAll(t, h.st)

	h.st = s.f.Reopen(t, h.st)
	checkEvents(t, "ReadAll after reopen", mustReadAll(t, h.st), before)
	checkEvents(t, "ReadStream after reopen", mustReadStream(t, h.st, "node-b"), before[3:5])
	if head := mustHead(t, h.st); head != uint64(len(before)) {
		t.Errorf("Head after reopen: %d, want %d", head, len(before))
	}
	checkEvents(t, "Subscribe after reopen", collect(t, h.st, 2, len(before)-2), before[2:])

	again, err := h.st.Append(ctxFor(t), "node-a", events.NoStream, a...)
	if err != nil {
		t.Fatalf("re-append after reopen: %v", err)
	}
	checkEvents(t, "re-append after reopen", again, before[:3])
	changed := a[0]
	changed.Data = []byte(`{"other":true}`)
	if _, err := h.st.Append(ctxFor(t), "node-a", events.Any, changed); !errors.Is(err, events.ErrIDConflict) {
		t.Errorf("conflicting re-append after reopen: got %v, want ErrIDConflict", err)
	}
	if _, err := h.st.Append(ctxFor(t), "node-a", events.Exactly(3), numbered(1, "stale")...); !errors.Is(err, events.ErrWrongExpectedVersion) {
		t.Errorf("append at a stale version after reopen: got %v, want ErrWrongExpectedVersion", err)
	}
	next := mustAppend(t, h.st, "node-a", events.Exactly(4), numbered(1, "after")...)
	if next[0].Version != 5 || next[0].Position != uint64(len(before))+1 {
		t.Errorf("first append after reopen stored at v%d #%d, want v5 #%d", next[0].Version, next[0].Position, len(before)+1)
	}
	after := append(before, next...)
	h.st = s.f.Reopen(t, h.st)
	checkEvents(t, "ReadAll after a second reopen", mustReadAll(t, h.st), after)
}

func waitFor(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func waitErr(t testing.TB, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}
