package render

import (
	"io"

	"meshplane/api"
)

// Info shows the controller (or the local store) the CLI works on: its
// role, version and positions (mesh info).
func Info(w io.Writer, f Format, info api.Info) error {
	if f == JSON {
		return WriteJSON(w, info)
	}
	tw := table(w)
	pf(tw, "role\t%s\n", info.Role)
	pf(tw, "version\t%s\n", info.Version)
	if !info.Started.IsZero() {
		pf(tw, "started\t%s\n", stamp(info.Started))
	}
	pf(tw, "store head\t%d\n", info.StoreHead)
	pf(tw, "projection position\t%d\n", info.ProjectionPosition)
	pf(tw, "nodes\t%d\n", info.Nodes)
	if info.Interval != "" {
		pf(tw, "interval\t%s\n", info.Interval)
	}
	pf(tw, "publishing\t%t\n", info.Publishing)
	if info.Chain != "" {
		pf(tw, "chain head\t%s\n", info.Chain)
	}
	return tw.Flush()
}
