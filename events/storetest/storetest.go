// Package storetest is the one conformance suite that every events.Store
// passes (memstore, boltstore, pgstore and esdbstore all run it), and the
// benchmarks that compare them. A store's own test file calls it in two
// lines:
//
//	func TestConformance(t *testing.T) { storetest.Run(t, storetest.Factory{Open: open}) }
//	func BenchmarkStore(b *testing.B)  { storetest.Bench(b, storetest.Factory{Open: open}) }
//
// The suite checks the contract written on events.Store and in the events
// package comment: expected versions, dense versions and positions,
// idempotent appends by id, atomic batches, validation, exact round trips,
// the hash chain (every event read carries its value, each recomputed from
// the one before; the chain head),
// subscriptions (catch-up, live, cancellation, close), concurrent writers and,
// for stores that persist, reopening.
//
// Every subtest that opens its own store runs in parallel with the others;
// every wait is bounded by a context deadline, so a broken store fails the
// suite instead of hanging it.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"meshplane/events"
)

// Factory opens stores for the suite.
type Factory struct {
	// Open returns a new, empty store. The suite closes it (closing twice
	// must be harmless).
	Open func(t testing.TB) events.Store
	// Reopen closes s and opens the same store again, keeping its data.
	// nil for stores that do not persist (memstore): the reopen tests are
	// then skipped with t.Skip and a reason.
	Reopen func(t testing.TB, s events.Store) events.Store
	// Unchained, when set, says why the store keeps no hash chain yet
	// (esdbstore): the chain tests then check that it says so (every
	// event's chain value and its head's are zero) rather than a chain.
	Unchained string
}

// waitLimit bounds every wait of the suite: a store that has not answered by
// then is broken, not slow. It is a guard against hangs, not a speed check:
// under -race on a loaded 2-core machine the 16 writers of
// ConcurrentSameStream on PostgreSQL took 6.5 s, so 10 s was too close.
const waitLimit = 30 * time.Second

// Run runs the whole conformance suite as subtests of t.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.Open == nil {
		t.Fatal("storetest: Factory.Open is nil")
	}
	s := &suite{f: f}
	t.Run("RoundTrip", s.testRoundTrip)
	t.Run("ExpectedVersion", s.testExpectedVersion)
	t.Run("VersionsAndPositions", s.testVersionsAndPositions)
	t.Run("InvalidInput", s.testInvalidInput)
	t.Run("Atomicity", s.testAtomicity)
	t.Run("Idempotence", s.testIdempotence)
	t.Run("ReadStream", s.testReadStream)
	t.Run("ReadAll", s.testReadAll)
	t.Run("UnknownTypePreserved", s.testUnknownTypePreserved)
	t.Run("Isolation", s.testIsolation)
	t.Run("CancelledContext", s.testCancelledContext)
	t.Run("Subscribe", s.testSubscribe)
	t.Run("Closed", s.testClosed)
	t.Run("ConcurrentSameStream", s.testConcurrentSameStream)
	t.Run("ConcurrentStreamsWithSubscriber", s.testConcurrentStreamsWithSubscriber)
	t.Run("Reopen", s.testReopen)
	t.Run("Chain", s.testChain)
	t.Run("ChainReopen", s.testChainReopen)
}

type suite struct{ f Factory }

// handle holds the current store of a subtest, so that the cleanup closes
// whichever store a Reopen left.
type handle struct{ st events.Store }

// open returns a new store, closed when the test ends.
func (s *suite) open(t testing.TB) *handle {
	t.Helper()
	st := s.f.Open(t)
	if st == nil {
		t.Fatal("storetest: Factory.Open returned nil")
	}
	h := &handle{st: st}
	t.Cleanup(func() {
		if err := h.st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// ctxFor returns a context that ends with the test or after waitLimit.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// when is the suite's event time: not UTC and not a round second, so that a
// store that keeps the zone, or drops nanoseconds, is caught.
func when(i int) time.Time {
	return time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.FixedZone("CEST", 2*60*60)).Add(time.Duration(i) * time.Second)
}

// newEvent makes a valid event of typ with data, leaving the stream for
// Append to fill in.
func newEvent(typ, data string) events.Event {
	return events.Event{
		ID:     events.NewID(),
		Type:   typ,
		Schema: 1,
		At:     when(0),
		Actor:  "operator:ann",
		Data:   json.RawMessage(data),
	}
}

// numbered makes n events whose data names their seq, for streams where
// order is checked.
func numbered(n int, tag string) []events.Event {
	out := make([]events.Event, n)
	for i := range out {
		out[i] = newEvent("test.numbered", fmt.Sprintf(`{"tag":%q,"seq":%d}`, tag, i+1))
		out[i].At = when(i)
	}
	return out
}

func mustAppend(t testing.TB, st events.Store, stream string, exp events.ExpectedVersion, evs ...events.Event) []events.Event {
	t.Helper()
	got, err := st.Append(ctxFor(t), stream, exp, evs...)
	if err != nil {
		t.Fatalf("Append(%s, %s, %d events): %v", stream, exp, len(evs), err)
	}
	if len(got) != len(evs) {
		t.Fatalf("Append(%s): returned %d events for %d appended", stream, len(got), len(evs))
	}
	return got
}

func mustHead(t testing.TB, st events.Store) uint64 {
	t.Helper()
	h, err := st.Head(ctxFor(t))
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return h
}

func mustReadStream(t testing.TB, st events.Store, stream string) []events.Event {
	t.Helper()
	evs, err := st.ReadStream(ctxFor(t), stream, 0, 0)
	if err != nil {
		t.Fatalf("ReadStream(%s): %v", stream, err)
	}
	return evs
}

func mustReadAll(t testing.TB, st events.Store) []events.Event {
	t.Helper()
	evs, err := st.ReadAll(ctxFor(t), 0, 0)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	return evs
}

// collect subscribes from after until it has n events, then stops it.
func collect(t testing.TB, st events.Store, after uint64, n int) []events.Event {
	t.Helper()
	errEnough := errors.New("enough")
	var got []events.Event
	err := st.Subscribe(ctxFor(t), after, func(e events.Event) error {
		got = append(got, e)
		if len(got) == n {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) {
		t.Fatalf("Subscribe(after %d) for %d events: got %d, then %v", after, n, len(got), err)
	}
	return got
}

// describe prints every field of an event, for failure messages.
func describe(e events.Event) string {
	return fmt.Sprintf("{id %s stream %q v%d #%d type %q schema %d at %s (%s) actor %q causation %q correlation %q data %q}",
		e.ID, e.Stream, e.Version, e.Position, e.Type, e.Schema, e.At.Format(time.RFC3339Nano), e.At.Location(),
		e.Actor, e.Causation, e.Correlation, e.Data) + " chain " + e.Chain.String()
}

// sameEvent reports whether got is want exactly: every field, the time as
// the same instant in UTC, the data byte for byte, and the chain value when
// want has one (events read from the store: a test's own have none).
func sameEvent(got, want events.Event) bool {
	return got.SameContent(want) && got.Version == want.Version && got.Position == want.Position &&
		got.At.Location() == time.UTC && bytes.Equal(got.Data, want.Data) &&
		(want.Chain.IsZero() || got.Chain == want.Chain)
}

func checkEvents(t testing.TB, what string, got, want []events.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if !sameEvent(got[i], want[i]) {
			t.Errorf("%s[%d]:\n got %s\nwant %s", what, i, describe(got[i]), describe(want[i]))
		}
	}
}

// checkUnchanged fails the test if the head or a stream's length moved.
func checkUnchanged(t testing.TB, st events.Store, head uint64, stream string, version uint64) {
	t.Helper()
	if h := mustHead(t, st); h != head {
		t.Errorf("head moved from %d to %d", head, h)
	}
	if events.ValidateStream(stream) != nil {
		return
	}
	if evs := mustReadStream(t, st, stream); uint64(len(evs)) != version {
		t.Errorf("stream %s has %d events, want %d", stream, len(evs), version)
	}
}

// prepared is what a store should keep of evs appended to stream: what
// events.Prepare makes of them, numbered from version v and position p.
func prepared(t testing.TB, stream string, v, p uint64, evs ...events.Event) []events.Event {
	t.Helper()
	out, err := events.Prepare(stream, evs, when(-3600)) // a zero At becomes this; tests that append one replace it with the store's
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	for i := range out {
		out[i].Version, out[i].Position = v+uint64(i), p+uint64(i)
	}
	return out
}
