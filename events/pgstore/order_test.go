package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
)

// follower is a subscription recording what it is given.
type follower struct {
	mu   sync.Mutex
	got  []events.Event
	done chan error
}

func follow(ctx context.Context, s *Store) *follower {
	f := &follower{done: make(chan error, 1)}
	go func() {
		f.done <- s.Subscribe(ctx, 0, func(e events.Event) error {
			f.mu.Lock()
			f.got = append(f.got, e)
			f.mu.Unlock()
			return nil
		})
	}()
	return f
}

func (f *follower) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

// waitCount waits until f has n events, or fails t.
func (f *follower) waitCount(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for f.count() < n {
		select {
		case err := <-f.done:
			t.Fatalf("subscription ended after %d of %d events: %v", f.count(), n, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscription has %d of %d events after %s", f.count(), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkFollowed checks that f saw exactly all (ReadAll's events, in order):
// every event once, no gap, no repeat.
func checkFollowed(t *testing.T, name string, f *follower, all []events.Event) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) != len(all) {
		t.Errorf("%s saw %d events, ReadAll has %d", name, len(f.got), len(all))
	}
	seen := map[uuid.UUID]bool{}
	for i, e := range f.got {
		if seen[e.ID] {
			t.Errorf("%s saw %s twice", name, e.ID)
		}
		seen[e.ID] = true
		if e.Position != uint64(i+1) {
			t.Fatalf("%s: event %d at position %d: a gap or a repeat", name, i, e.Position)
		}
		if i < len(all) && (e.ID != all[i].ID || !e.SameContent(all[i]) || e.Version != all[i].Version) {
			t.Fatalf("%s: position %d is %s, ReadAll has %s", name, i+1, e, all[i])
		}
	}
}

// TestNoReaderSkipsOrRepeats: 8 writers, on two stores as two processes
// would be, append for 10 seconds (2 under -short) in batches of 1 to 5,
// while 2 subscribers, on a third store and on the first, follow from 0.
// Each subscriber sees every event exactly once, in one order, equal to
// ReadAll's; every acknowledged event is in it; every stream's versions are
// dense.
func TestNoReaderSkipsOrRepeats(t *testing.T) {
	pgtest.Need(t, srv)
	run := 10 * time.Second
	if testing.Short() {
		run = 2 * time.Second
	}
	url := srv.Database(t)
	stores := []*Store{openURL(t, url), openURL(t, url), openURL(t, url)}
	ctx, cancel := context.WithTimeout(context.Background(), run+2*time.Minute)
	defer cancel()
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	subs := []*follower{follow(subCtx, stores[2]), follow(subCtx, stores[0])}

	const writers = 8
	var acked [writers][]uuid.UUID
	var appends atomic.Int64
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			s := stores[w%2]
			stream := fmt.Sprintf("node-w%d", w)
			var version uint64
			for i := 0; time.Now().Before(stop); i++ {
				evs := make([]events.Event, 1+i%5)
				for j := range evs {
					evs[j] = event("test.ordered")
				}
				got, err := s.Append(ctx, stream, events.Exactly(version), evs...)
				if err != nil {
					t.Errorf("writer %d: append at version %d: %v", w, version, err)
					return
				}
				for _, e := range got {
					acked[w] = append(acked[w], e.ID)
				}
				version = got[len(got)-1].Version
				appends.Add(1)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	all, err := stores[1].ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range subs {
		f.waitCount(t, len(all), time.Minute)
		_ = i
	}
	stopSubs()
	for i, f := range subs {
		if err := <-f.done; !errors.Is(err, context.Canceled) {
			t.Errorf("subscriber %d ended with %v", i, err)
		}
		checkFollowed(t, fmt.Sprintf("subscriber %d", i), f, all)
	}
	stored := map[uuid.UUID]events.Event{}
	streamAt := map[string]uint64{}
	for _, e := range all {
		stored[e.ID] = e
		if streamAt[e.Stream]++; e.Version != streamAt[e.Stream] {
			t.Errorf("%s at version %d, want %d", e, e.Version, streamAt[e.Stream])
		}
	}
	n := 0
	for w := range writers {
		for _, id := range acked[w] {
			n++
			if _, ok := stored[id]; !ok {
				t.Errorf("writer %d: acknowledged event %s is not stored", w, id)
			}
		}
	}
	if n != len(all) {
		t.Errorf("%d events acknowledged, %d stored", n, len(all))
	}
	t.Logf("%d appends, %d events in %s, followed by 2 subscribers", appends.Load(), len(all), run)
}

// TestSubscribeAcrossStores: a subscriber on one store wakes on another
// store's commits through LISTEN/NOTIFY, well before its poll interval.
func TestSubscribeAcrossStores(t *testing.T) {
	pgtest.Need(t, srv)
	url := srv.Database(t)
	writer := openURL(t, url)
	reader := openURL(t, url, WithPollInterval(time.Hour)) // only NOTIFY can wake it
	ctx := testCtx(t, time.Minute)
	f := follow(ctx, reader)
	for i := range 5 {
		if _, err := writer.Append(ctx, "node-novox", events.Exactly(uint64(i)), event("test.woken")); err != nil {
			t.Fatal(err)
		}
		f.waitCount(t, i+1, 10*time.Second)
	}
}

// TestSubscribeByPolling: with NOTIFY never reaching it (its LISTEN channel
// is not the writer's), a subscriber still sees every event, by polling.
func TestSubscribeByPolling(t *testing.T) {
	pgtest.Need(t, srv)
	url := srv.Database(t)
	// The writer notifies a channel nobody listens on: its commits wake
	// nobody else.
	writer := openURL(t, url, func(c *config) { c.notify = "pgstore_nobody" })
	reader := openURL(t, url, WithPollInterval(50*time.Millisecond))
	ctx := testCtx(t, time.Minute)
	f := follow(ctx, reader)
	for i := range 5 {
		if _, err := writer.Append(ctx, "node-novox", events.Exactly(uint64(i)), event("test.polled")); err != nil {
			t.Fatal(err)
		}
		f.waitCount(t, i+1, 10*time.Second)
	}
}
