package render

import (
	"fmt"
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
	fmt.Fprintf(tw, "role\t%s\n", info.Role)
	fmt.Fprintf(tw, "version\t%s\n", info.Version)
	if !info.Started.IsZero() {
		fmt.Fprintf(tw, "started\t%s\n", stamp(info.Started))
	}
	fmt.Fprintf(tw, "store head\t%d\n", info.StoreHead)
	fmt.Fprintf(tw, "projection position\t%d\n", info.ProjectionPosition)
	fmt.Fprintf(tw, "nodes\t%d\n", info.Nodes)
	if info.Interval != "" {
		fmt.Fprintf(tw, "interval\t%s\n", info.Interval)
	}
	fmt.Fprintf(tw, "publishing\t%t\n", info.Publishing)
	if info.Chain != "" {
		fmt.Fprintf(tw, "chain head\t%s\n", info.Chain)
	}
	return tw.Flush()
}
