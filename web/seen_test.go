package web

import (
	"testing"
	"time"

	"meshplane/api"
)

// TestSeenOf: a heartbeat heard wins over the last report; a node
// unreachable and never reported is never heard; else the report's time,
// received when known.
func TestSeenOf(t *testing.T) {
	hb := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	made, got := hb.Add(-time.Hour), hb.Add(-59*time.Minute)
	applied := &api.ApplyRecord{DeclMark: api.DeclMark{At: made}}
	received := &api.ApplyRecord{DeclMark: api.DeclMark{At: made}}
	received.Report.ReceivedAt = got
	for _, c := range []struct {
		ns    api.NodeStatus
		at    time.Time
		label string
	}{
		{api.NodeStatus{LastSeen: &hb, Applied: applied}, hb, "last heartbeat"},
		{api.NodeStatus{Sync: api.SyncUnreachable}, time.Time{}, "never heard"},
		{api.NodeStatus{}, time.Time{}, "never reported"},
		{api.NodeStatus{Applied: applied}, made, "last report"},
		{api.NodeStatus{Applied: received}, got, "last report"},
	} {
		at, label := seenOf(c.ns)
		if !at.Equal(c.at) || label != c.label {
			t.Errorf("seenOf(%+v) = %v %q, want %v %q", c.ns, at, label, c.at, c.label)
		}
	}
}
