package main

import (
	"strings"
	"testing"
)

// TestAtGolden: the read verbs --at a position of the example (20: novox's first apply, before g14's)'s history
// answer as the mesh stood then, with the header, alike locally and from
// a controller; timeline --until POSITION is the timeline --at it.
func TestAtGolden(t *testing.T) {
	dir := upExample(t)
	at := []string{"--at", "20"}
	goldenCases(t, dir, []goldenCase{
		{"at-status", append([]string{"status"}, at...), false, nil},
		{"at-status-json", append([]string{"status", "-o", "json"}, at...), false, nil},
		{"at-node-show", append([]string{"node", "show", "novox"}, at...), false, nil},
		{"at-node-list", append([]string{"node", "list"}, at...), false, nil},
		{"at-module-list", append([]string{"module", "list"}, at...), false, nil},
		{"at-churn", append([]string{"churn"}, at...), false, nil},
		{"at-roster-history", append([]string{"roster", "--history", "novox"}, at...), false, nil},
		{"at-timeline-until", []string{"timeline", "--node", "novox", "--until", "20"}, false, nil},
	})
}

// TestAtRefused: a moment outside the history is refused (exit 3), one
// that does not parse is bad usage (exit 2), and writes take none.
func TestAtRefused(t *testing.T) {
	dir := upExample(t)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"status", "--at", "999999"}, exitRejected, "past the head"},
		{[]string{"status", "--at", "2000-01-01T00:00:00Z"}, exitRejected, "before the first event"},
		{[]string{"churn", "--at", "soon"}, exitUsage, "want a position of 1 or more, or an RFC 3339 time"},
		{[]string{"node", "register", "zz", "--at", "3"}, exitUsage, "unknown flag: --at"},
	} {
		code, out, errOut := mesh(t, append(tc.args, "--data", dir)...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("%v: exit %d, %s%s; want %d saying %q", tc.args, code, out, errOut, tc.code, tc.says)
		}
	}
}
