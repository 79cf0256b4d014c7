package projections

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"

	"meshplane/events"
)

func TestHolds(t *testing.T) {
	const reason = "would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken"
	ca := events.Held{Name: "ca", Module: "route-proxy", Reason: reason}
	proxy := events.Held{Name: "proxy", Module: "route-proxy", Reason: reason}
	pics := events.Held{Name: "pics", Module: "photos", Reason: "found on this adopted node; not touched until photos is taken"}
	type want struct {
		name  string
		since uint64 // position of the apply it has been held since
	}
	tests := []struct {
		name    string
		applies [][]events.Held
		want    []want // sorted by module, then name
	}{
		{name: "one apply", applies: [][]events.Held{{proxy, ca}}, want: []want{{"ca", 1}, {"proxy", 1}}},
		{name: "sorted by module, then name", applies: [][]events.Held{{proxy, pics, ca}}, want: []want{{"pics", 1}, {"ca", 1}, {"proxy", 1}}},
		{name: "the latest apply replaces the list", applies: [][]events.Held{{proxy, ca}, {pics}}, want: []want{{"pics", 2}}},
		{name: "held again keeps its since", applies: [][]events.Held{{ca}, {ca, proxy}}, want: []want{{"ca", 1}, {"proxy", 2}}},
		{name: "a break restarts since", applies: [][]events.Held{{ca}, {}, {ca}}, want: []want{{"ca", 3}}},
		{name: "taken: nothing held", applies: [][]events.Held{{ca, proxy}, nil}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			for _, h := range tc.applies {
				g.applied("novox", events.ApplyReported{Declaration: "novox/1", Held: h})
			}
			got, err := g.folded().Holds.Of("novox")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("holds %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i].Name != w.name || got[i].Since.Position != w.since || got[i].Reason == "" || got[i].Module == "" {
					t.Errorf("hold %d: %+v, want %s since %d", i, got[i], w.name, w.since)
				}
			}
		})
	}
}

func TestHoldsUnknownNode(t *testing.T) {
	g := newGen(t).assign("m", "novox")
	if _, err := g.folded().Holds.Of("novox"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("Of before any apply = %v, want ErrUnknownNode", err)
	}
}

// TestHoldsSameListAgain: a report whose resolved held list is the one the
// node's list was made from keeps the list (and each hold's since); any
// other list, an empty one after a node loaded from a snapshot included,
// replaces it.
func TestHoldsSameListAgain(t *testing.T) {
	ca := events.Held{Name: "ca", Module: "route-proxy", Reason: "would mount"}
	ev := func(pos uint64) events.Event {
		return events.Event{Position: pos, Stream: "node-novox", Type: events.TypeApplyReported, ID: uuid.New()}
	}
	first := ev(1)
	tests := []struct {
		name      string
		reload    bool // save and load the projection after the first apply
		then      events.ApplyReported
		wantHeld  int
		wantSince uint64
	}{
		{name: "held since the first", then: events.ApplyReported{Node: "novox", Declaration: "novox/1", HeldSince: first.ID.String()}, wantHeld: 1, wantSince: 1},
		{name: "the same list in full", then: events.ApplyReported{Node: "novox", Declaration: "novox/1", Held: []events.Held{ca}}, wantHeld: 1, wantSince: 1},
		{name: "nothing held", then: events.ApplyReported{Node: "novox", Declaration: "novox/1"}, wantHeld: 0},
		{name: "nothing held, after a snapshot", reload: true, then: events.ApplyReported{Node: "novox", Declaration: "novox/1"}, wantHeld: 0},
		{name: "held since the first, after a snapshot", reload: true, then: events.ApplyReported{Node: "novox", Declaration: "novox/1", HeldSince: first.ID.String()}, wantHeld: 1, wantSince: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHolds()
			if err := h.Fold(first, events.ApplyReported{Node: "novox", Declaration: "novox/1", Held: []events.Held{ca}}); err != nil {
				t.Fatal(err)
			}
			if tc.reload { // as a snapshot file does: through JSON
				b, err := json.Marshal(h.save())
				if err != nil {
					t.Fatal(err)
				}
				var snap holdsSnap
				if err := json.Unmarshal(b, &snap); err != nil {
					t.Fatal(err)
				}
				h = NewHolds()
				h.load(&snap)
			}
			if err := h.Fold(ev(2), tc.then); err != nil {
				t.Fatal(err)
			}
			got, err := h.Of("novox")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantHeld {
				t.Fatalf("holds %+v, want %d", got, tc.wantHeld)
			}
			if tc.wantHeld > 0 && got[0].Since.Position != tc.wantSince {
				t.Errorf("held since %d, want %d", got[0].Since.Position, tc.wantSince)
			}
			if n := h.nodes["novox"]; n.Position != 2 {
				t.Errorf("node at position %d, want 2", n.Position)
			}
		})
	}
}
