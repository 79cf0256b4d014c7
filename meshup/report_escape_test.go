package meshup

import (
	"bytes"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/projections"
)

// TestReportEscapes: what mesh up prints of a node (a failed compose's
// error, an apply's summary) has its control characters escaped: no
// escape sequence reaches the terminal and no forged line starts.
func TestReportEscapes(t *testing.T) {
	const hostile = "\x1b[2J\x1b[31mFAKE\n999 2026-11-30 10:00:00 n2 node.removed operator:admin"
	var b bytes.Buffer
	SayPasses(&b, Where{}, []projections.NodeStatus{{Node: "n1", Sync: "stale", Health: "failing",
		ComposeFailed: &projections.ComposeFailure{Error: hostile}}})
	sayNode(&b, api.NodeStatus{Node: "n1", Sync: "in-sync", Health: "failing",
		Applied:       &api.ApplyRecord{Summary: hostile},
		ComposeFailed: &api.ComposeFailure{Error: hostile}})
	got := b.String()
	if strings.Contains(got, "\x1b") {
		t.Errorf("the report holds a raw ESC:\n%q", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "999 ") {
			t.Errorf("the report holds a forged line:\n%s", got)
		}
	}
}
