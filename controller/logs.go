package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/wire"
)

// LogAsker asks a node's agent for a chunk of a container's log (mesh
// logs): the bus implements it (a request on the node's logs subject).
type LogAsker interface {
	Logs(ctx context.Context, node string, req wire.LogRequest) (wire.LogChunk, error)
}

// followWait is how long one ask of a follow waits for a line at the
// agent (within wire.MaxLogWait).
const followWait = 15 * time.Second

var _ api.Logs = (*Controller)(nil)

// Logs implements api.Logs: the tail of the container's log from its
// node's agent, then, with Follow, one ask after another from the last
// line's time (the agent waits for a line), until ctx ends.
func (c *Controller) Logs(ctx context.Context, req api.LogsRequest, out func(api.LogChunk) error) error {
	if err := req.Validate(); err != nil {
		return err
	}
	nodes, err := c.handler.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("controller: logs: %w", err)
	}
	if !slices.Contains(nodes, req.Node) {
		return &commands.Rejection{Code: commands.CodeNodeUnknown, Msg: fmt.Sprintf("logs: node %q is not registered", req.Node)}
	}
	la, ok := c.pub.(LogAsker)
	if !ok {
		return &commands.Rejection{Code: api.CodeUnsupported, Msg: "logs: this controller has no bus to ask the node's agent on (ask a running controller: --server)"}
	}
	q := wire.LogQuery{Tail: req.Tail}
	for {
		ch, err := la.Logs(ctx, req.Node, wire.LogRequest{Container: req.Container, LogQuery: q})
		if ctx.Err() != nil {
			return nil // the reader left
		}
		if err != nil {
			return &commands.Rejection{Code: api.CodeLogsUnreadable, Msg: fmt.Sprintf("logs of %s on %s: %v", req.Container, req.Node, err)}
		}
		// A tail's cut is said (lines before it left out); a follow's cut
		// chunk is followed at once by the rest.
		if len(ch.Data) > 0 || q.WaitMillis == 0 {
			if err := out(api.LogChunk{Data: ch.Data, Cut: ch.Cut && q.Since.IsZero()}); err != nil {
				return err
			}
		}
		switch {
		case ch.Cut && !q.Since.IsZero():
			q = wire.LogQuery{Since: ch.Cursor} // the rest at once
		case !req.Follow:
			return nil
		default:
			q = wire.LogQuery{Since: ch.Cursor, WaitMillis: int(followWait / time.Millisecond)}
		}
		if q.Since.IsZero() {
			return &commands.Rejection{Code: api.CodeLogsUnreadable, Msg: fmt.Sprintf("logs of %s on %s: the agent gave no cursor to follow from", req.Container, req.Node)}
		}
	}
}
