package projections

import (
	"testing"
	"time"

	"meshplane/events"
)

// TestTimelineLiveness: node.went-silent and node.came-back read as
// sentences under their node, with and without a last heartbeat.
func TestTimelineLiveness(t *testing.T) {
	seen := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tl := newGen(t).
		add("node-n1", "controller", "", events.NodeWentSilent{Node: "n1", LastSeen: seen, Bound: "30s"}).
		add("node-n1", "controller", "", events.NodeCameBack{Node: "n1", LastSeen: seen.Add(4*time.Minute + 12*time.Second), SilentFor: "4m12s"}).
		add("node-n2", "controller", "", events.NodeWentSilent{Node: "n2", Bound: "30s"}).
		folded().Timeline
	es := tl.Query(Filter{Node: "n1"})
	want := []string{
		"n1 went silent: no heartbeat for 30s, last seen 10:00:00",
		"n1 came back: heard at 10:04:12 after 4m12s silent",
	}
	if len(es) != len(want) {
		t.Fatalf("%d entries for n1, want %d: %+v", len(es), len(want), es)
	}
	for i, w := range want {
		if es[i].Summary != w {
			t.Errorf("entry %d: %q, want %q", i, es[i].Summary, w)
		}
	}
	es = tl.Query(Filter{Node: "n2"})
	if len(es) != 1 || es[0].Summary != "n2 went silent: no heartbeat within 30s of the controller leading" {
		t.Errorf("n2: %+v", es)
	}
}
