package render_test

import (
	"time"

	"meshplane/api"
)

// What a controller hearing heartbeats adds to a status (TestPrinters'
// status-liveness and node-show-liveness): status gains a LAST SEEN column
// (a node never heard says "never") and node show a seen line; without it
// (a store read alone) both are as before.
var (
	heard  = withSeen(converged, at(90*time.Second))
	silent = unreachable(waiting)
)

func withSeen(st api.NodeStatus, t time.Time) api.NodeStatus {
	st.LastSeen = &t
	return st
}

func unreachable(st api.NodeStatus) api.NodeStatus {
	st.Sync = api.SyncUnreachable
	return st
}
