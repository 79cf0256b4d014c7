package pgstore

import (
	"errors"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
)

// TestPredictedAppends: two stores on one database take turns, so that
// each one's tail (the log as its last commit left it) is sometimes the
// log and sometimes behind it. Every append gets the position and version
// the log gives it, the expected-version checks see the other store's
// appends, a replay of stored ids succeeds whatever it expected, and the
// history is dense and its chain intact.
func TestPredictedAppends(t *testing.T) {
	pgtest.Need(t, srv)
	url := srv.Database(t)
	ctx := testCtx(t, time.Minute)
	st := []*Store{openURL(t, url), openURL(t, url)}
	replay := []events.Event{event("test.replayed")}
	steps := []struct {
		name     string
		store    int
		stream   string
		expected events.ExpectedVersion
		evs      []events.Event // nil: one new event
		wantPos  uint64         // the first event's
		wantVer  uint64
		wantErr  error
		predict  bool // the store's tail holds the log's head before the step
	}{
		{name: "first append, nothing known", store: 0, stream: "node-a", expected: events.NoStream, wantPos: 1, wantVer: 1},
		{name: "same stream, predicted", store: 0, stream: "node-a", expected: events.Exactly(1), wantPos: 2, wantVer: 2, predict: true},
		{name: "a stream the tail does not know", store: 0, stream: "node-b", expected: events.NoStream, wantPos: 3, wantVer: 1, predict: true},
		{name: "the other store, behind", store: 1, stream: "node-a", expected: events.Exactly(2), wantPos: 4, wantVer: 3},
		{name: "the first store, behind: the head moved", store: 0, stream: "node-a", expected: events.Exactly(3), wantPos: 5, wantVer: 4},
		{name: "its tail after a miss", store: 0, stream: "node-b", expected: events.Exactly(1), wantPos: 6, wantVer: 2, predict: true},
		{name: "a stale expected version", store: 0, stream: "node-a", expected: events.Exactly(3), wantErr: events.ErrWrongExpectedVersion, predict: true},
		{name: "the tail survives a refusal", store: 0, stream: "node-a", expected: events.Exactly(4), wantPos: 7, wantVer: 5, predict: true},
		{name: "ids to replay", store: 1, stream: "node-c", expected: events.NoStream, evs: replay, wantPos: 8, wantVer: 1},
		{name: "a replay, predicted, whatever it expected", store: 1, stream: "node-c", expected: events.NoStream, evs: replay, wantPos: 8, wantVer: 1, predict: true},
		{name: "a replay by the store that did not write it", store: 0, stream: "node-c", expected: events.Exactly(7), evs: replay, wantPos: 8, wantVer: 1},
		{name: "after the replay", store: 0, stream: "node-c", expected: events.Exactly(1), wantPos: 9, wantVer: 2, predict: true},
		{name: "a large batch, predicted (COPY)", store: 0, stream: "node-a", expected: events.Exactly(5), evs: batchOf(copyMin + 36),
			wantPos: 10, wantVer: 6, predict: true},
		{name: "a large batch behind: the guard fails, nothing written", store: 1, stream: "node-c", expected: events.Any, evs: batchOf(copyMin + 36),
			wantPos: 110, wantVer: 3},
		{name: "a large batch after it, predicted", store: 1, stream: "node-c", expected: events.Exactly(102), evs: batchOf(copyMin + 36),
			wantPos: 210, wantVer: 103, predict: true},
	}
	for _, s := range steps {
		st := st[s.store]
		if got := st.tail.ok && st.tail.head == headOf(t, st); got != s.predict {
			t.Fatalf("%s: tail %+v predicts the head: %v, want %v", s.name, st.tail, got, s.predict)
		}
		evs := s.evs
		if evs == nil {
			evs = []events.Event{event("test.predicted")}
		}
		out, err := st.Append(ctx, s.stream, s.expected, evs...)
		if s.wantErr != nil {
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("%s: err %v, want %v", s.name, err, s.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if out[0].Position != s.wantPos || out[0].Version != s.wantVer || out[0].Chain.IsZero() {
			t.Fatalf("%s: position %d version %d chain %s, want %d, %d and a chain value",
				s.name, out[0].Position, out[0].Version, out[0].Chain, s.wantPos, s.wantVer)
		}
	}
	all, err := st[0].ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := events.NewChainVerifier(nil)
	for _, e := range all {
		v.Add(e)
	}
	if r := v.Report(); r.Err() != nil || r.Checked != 309 || r.Start != 1 {
		t.Fatalf("verify: %+v, %v; want 309 positions chained from 1", r, r.Err())
	}
}

// headOf reads s's head from the database.
func headOf(t *testing.T, s *Store) uint64 {
	t.Helper()
	h, err := s.Head(testCtx(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// batchOf returns n new events.
func batchOf(n int) []events.Event {
	evs := make([]events.Event, n)
	for i := range evs {
		evs[i] = event("test.batch")
	}
	return evs
}

// TestPredictionChecksTheHeadChain: the head's chain value changed behind
// the store's back (its position unmoved) fails the prediction, for a
// small group (the guarded INSERT) and a large one (the COPY's guard):
// the next rows chain from the value stored, not from the one the
// committer remembers.
func TestPredictionChecksTheHeadChain(t *testing.T) {
	pgtest.Need(t, srv)
	for _, n := range []int{1, copyMin} {
		s := openURL(t, srv.Database(t))
		ctx := testCtx(t, time.Minute)
		first, err := s.Append(ctx, "node-a", events.NoStream, event("test.first"))
		if err != nil {
			t.Fatal(err)
		}
		if !s.tail.ok || s.tail.chain != first[0].Chain {
			t.Fatalf("batch of %d: tail %+v after the first append", n, s.tail)
		}
		var stored events.Hash
		for i := range stored {
			stored[i] = 7
		}
		if _, err := s.pool.Exec(ctx, "UPDATE events SET chain = $1 WHERE position = 1", stored[:]); err != nil {
			t.Fatal(err)
		}
		got, err := s.Append(ctx, "node-a", events.Exactly(1), batchOf(n)...)
		if err != nil {
			t.Fatalf("batch of %d: %v", n, err)
		}
		if want := events.ChainOf(stored, got[0]); got[0].Position != 2 || got[0].Chain != want {
			t.Fatalf("batch of %d: position %d chain %s, want 2 and %s (from the stored head)", n, got[0].Position, got[0].Chain, want)
		}
	}
}
