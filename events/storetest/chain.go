package storetest

import (
	"testing"

	"meshplane/events"
)

// testChain: every event a store returns carries its chain value, and the
// values are the chain of events' chain.go, from position 1: each value
// recomputed from the record and the value before it matches, whatever
// read returned it (Append, a replayed Append, ReadAll, ReadStream,
// ScanAll, Subscribe); ChainHead is the last event's; a verifier anchored
// at the head passes.
func (s *suite) testChain(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	if s.f.Unchained != "" {
		testUnchained(t, st, s.f.Unchained)
		return
	}
	empty, err := st.ChainHead(ctxFor(t))
	if err != nil {
		t.Fatalf("ChainHead of an empty store: %v", err)
	}
	if empty != (events.ChainHead{}) {
		t.Errorf("ChainHead of an empty store: %+v, want the zero head", empty)
	}
	a := numbered(3, "a")
	var appended []events.Event
	appended = append(appended, mustAppend(t, st, "node-a", events.NoStream, a...)...)
	appended = append(appended, mustAppend(t, st, "node-b", events.NoStream, numbered(2, "b")...)...)
	appended = append(appended, mustAppend(t, st, "node-a", events.Exactly(3), numbered(1, "a2")...)...)

	all := mustReadAll(t, st)
	checkChain(t, "ReadAll", all)
	checkEvents(t, "Append's chain values", appended, all)
	checkEvents(t, "ReadStream's chain values", mustReadStream(t, st, "node-b"), all[3:5])
	checkEvents(t, "Subscribe's chain values", collect(t, st, 1, len(all)-1), all[1:])
	if sc, ok := st.(events.Scanner); ok {
		checkEvents(t, "ScanAll's chain values", scanAll(t, sc, 0, 0), all)
	}
	again, err := st.Append(ctxFor(t), "node-a", events.Any, a...)
	if err != nil {
		t.Fatalf("replayed Append: %v", err)
	}
	checkEvents(t, "a replayed Append's chain values", again, all[:3])

	head, err := st.ChainHead(ctxFor(t))
	if err != nil {
		t.Fatalf("ChainHead: %v", err)
	}
	last := all[len(all)-1]
	if want := (events.ChainHead{Position: last.Position, Chain: last.Chain, At: last.At}); head.Position != want.Position ||
		head.Chain != want.Chain || !head.At.Equal(want.At) {
		t.Errorf("ChainHead: %s, want %s", head, want)
	}
	parsed, err := events.ParseChainHead(head.String())
	if err != nil || parsed.Position != head.Position || parsed.Chain != head.Chain || !parsed.At.Equal(head.At) {
		t.Errorf("ParseChainHead(%q) = %s, %v", head.String(), parsed, err)
	}
	v := events.NewChainVerifier(&head)
	for _, e := range all {
		v.Add(e)
	}
	if r := v.Report(); r.Err() != nil || !r.AnchorChecked || r.Start != 1 {
		t.Errorf("verify against the store's own head: %+v, %v", r, r.Err())
	}
}

// testChainReopen: the chain goes on across a reopen, from the stored
// value of the head.
func (s *suite) testChainReopen(t *testing.T) {
	if s.f.Reopen == nil {
		t.Skip("store does not persist (Factory.Reopen is nil)")
	}
	t.Parallel()
	h := s.open(t)
	if s.f.Unchained != "" {
		mustAppend(t, h.st, "node-a", events.NoStream, numbered(1, "a")...)
		h.st = s.f.Reopen(t, h.st)
		testUnchained(t, h.st, s.f.Unchained)
		return
	}
	mustAppend(t, h.st, "node-a", events.NoStream, numbered(3, "a")...)
	before := mustReadAll(t, h.st)
	h.st = s.f.Reopen(t, h.st)
	head, err := h.st.ChainHead(ctxFor(t))
	if err != nil {
		t.Fatalf("ChainHead after reopen: %v", err)
	}
	if head.Position != 3 || head.Chain != before[2].Chain {
		t.Errorf("ChainHead after reopen: %s, want position 3 chain %s", head, before[2].Chain)
	}
	mustAppend(t, h.st, "node-b", events.NoStream, numbered(2, "b")...)
	all := mustReadAll(t, h.st)
	checkEvents(t, "ReadAll after reopen", all[:3], before)
	checkChain(t, "ReadAll after reopen and append", all)
}

// checkChain checks that evs, read from position 1, are chained: each value
// is set and recomputes from its record and the value before it.
func checkChain(t testing.TB, what string, evs []events.Event) {
	t.Helper()
	var prev events.Hash
	for i, e := range evs {
		if e.Position != uint64(i)+1 {
			t.Fatalf("%s[%d]: position %d, want %d", what, i, e.Position, i+1)
		}
		if e.Chain.IsZero() {
			t.Errorf("%s[%d] (position %d): no chain value", what, i, e.Position)
		} else if want := events.ChainOf(prev, e); e.Chain != want {
			t.Errorf("%s[%d] (position %d): chain %s, recomputed %s", what, i, e.Position, e.Chain, want)
		}
		if i > 0 && e.Chain == evs[i-1].Chain {
			t.Errorf("%s[%d]: the same chain value as the event before", what, i)
		}
		prev = e.Chain
	}
}

// testUnchained: a store that keeps no chain says so: no event it returns
// carries a value, nor does its head, and a verifier finds no start.
func testUnchained(t *testing.T, st events.Store, why string) {
	appended := mustAppend(t, st, "node-b", events.NoStream, numbered(3, "b")...)
	all := mustReadAll(t, st)
	for _, e := range append(appended, all...) {
		if !e.Chain.IsZero() {
			t.Errorf("an unchained store (%s) returned position %d with a chain value", why, e.Position)
		}
	}
	head, err := st.ChainHead(ctxFor(t))
	last := all[len(all)-1]
	if err != nil || head.Position != last.Position || !head.Chain.IsZero() || !head.At.Equal(last.At) {
		t.Errorf("ChainHead of an unchained store: %s, %v", head, err)
	}
	v := events.NewChainVerifier(&head)
	for _, e := range all {
		v.Add(e)
	}
	if r := v.Report(); r.Err() != nil || r.Start != 0 {
		t.Errorf("verify of an unchained store: %+v", r)
	}
}
