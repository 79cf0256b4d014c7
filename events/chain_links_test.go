package events_test

import (
	"encoding/json"
	"testing"

	"meshplane/events"
)

// TestChainCarriesEveryEarlierRecord: a chain value depends on every
// record before it. Changing one record of a history changes its own
// chain value and every later one, and none before it; and the same
// record after two different values has two different values. (Issue 33,
// section 8: a chain value computed without the previous one was caught
// only by TestChainPinned's two pinned values.)
func TestChainCarriesEveryEarlierRecord(t *testing.T) {
	const n = 6
	base := chained(n)
	values := func(evs []events.Event) []events.Hash {
		out := make([]events.Hash, len(evs))
		var prev events.Hash
		for i, e := range evs {
			prev = events.ChainOf(prev, e)
			out[i] = prev
		}
		return out
	}
	want := values(base)
	for i := range want {
		if want[i] != base[i].Chain {
			t.Fatalf("position %d: ChainOf over the history gives %s, the fixture %s", i+1, want[i], base[i].Chain)
		}
	}
	for k := range n {
		changed := chained(n)
		changed[k].Data = json.RawMessage(`{"node":"g14"}`)
		got := values(changed)
		for i := range n {
			switch same := got[i] == want[i]; {
			case i < k && !same:
				t.Errorf("record %d changed: the chain value of position %d, before it, changed too", k+1, i+1)
			case i >= k && same:
				t.Errorf("record %d changed: the chain value of position %d is the same (%s): it does not carry the records before it", k+1, i+1, got[i])
			}
		}
	}
	rec := events.AppendRecord(nil, base[n-1])
	if events.ChainRecord(want[0], rec) == events.ChainRecord(want[1], rec) {
		t.Error("the same record after two different chain values has one chain value")
	}
}
