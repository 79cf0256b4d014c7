package projections

import (
	"errors"
	"testing"

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
