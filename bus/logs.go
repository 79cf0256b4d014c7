package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"meshplane/internal/safego"
	"meshplane/wire"
)

// Container logs (mesh logs). The controller asks a node's agent for a
// chunk of a container's log: a NATS request on LogsSubject(node),
// answered by the agent only (NodePermissions lets a node subscribe to its
// own logs subject, and publish nothing but one answer to a request it
// received). A follow is one request after another, each from the last
// chunk's cursor, each waiting at most wire.MaxLogWait for a line.
//
// The request is an wire.LogRequest as JSON. The reply is one JSON
// object:
//
//	{"version": 1, "chunk": {"data": "<base64>", "cursor": "2026-…Z", "cut": false}}
//	{"version": 1, "error": "agent: logs of web: docker: logs web: managed container of node novox not found"}
//
// A node with no agent connected gives no responder at once (ErrNoAgent).
// Nothing is stored on the bus.

// LogsSubjectPrefix starts every logs subject: mesh.logs.<node>.
const LogsSubjectPrefix = "mesh.logs."

// LogsSubject is the subject node's agent answers log requests on. A node
// may subscribe to exactly its own, never a wildcard (NodePermissions).
func LogsSubject(node string) string { return LogsSubjectPrefix + node }

// logsVersion is the version of the logs reply.
const logsVersion = 1

// maxLogAnswers bounds the log requests one agent answers at once (each
// may wait wire.MaxLogWait for a line): one more is answered busy.
const maxLogAnswers = 8

// logsMargin is how much longer than a request's own wait the controller
// waits for its answer.
const logsMargin = 10 * time.Second

type logsReply struct {
	Version int            `json:"version"`
	Chunk   *wire.LogChunk `json:"chunk,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// ErrBadLogs means a logs reply did not decode.
var ErrBadLogs = errors.New("bus: bad logs reply")

// ErrLogsFailed means the node's agent answered that it could not read the
// log; the error says why.
var ErrLogsFailed = errors.New("the agent could not read the log")

// Logs asks node's agent for a chunk of a container's log, waiting for its
// answer until ctx ends or the request's own wait and a margin pass. No
// agent connected is ErrNoAgent; an agent that could not read the log is
// its error, wrapping ErrLogsFailed.
func (c *ControllerConn) Logs(ctx context.Context, node string, req wire.LogRequest) (wire.LogChunk, error) {
	if err := ValidNode(node); err != nil {
		return wire.LogChunk{}, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: %w", node, err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Duration(req.WaitMillis)*time.Millisecond+logsMargin)
	defer cancel()
	msg, err := c.nc.RequestWithContext(rctx, LogsSubject(node), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: %w", node, ErrNoAgent)
	case errors.Is(err, context.DeadlineExceeded):
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: its agent did not answer in time: %w", node, err)
	case err != nil:
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: %w", node, err)
	}
	var r logsReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: %w: %v", node, ErrBadLogs, err)
	}
	switch {
	case r.Error != "":
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: %w: %s", node, ErrLogsFailed, r.Error)
	case r.Chunk == nil:
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: %w: version %d, without a chunk", node, ErrBadLogs, r.Version)
	case len(r.Chunk.Data) > wire.MaxLogChunk:
		return wire.LogChunk{}, fmt.Errorf("bus: logs on %s: %w: a chunk of %d bytes, over %d", node, ErrBadLogs, len(r.Chunk.Data), wire.MaxLogChunk)
	}
	return *r.Chunk, nil
}

// Logs asks node's agent for a chunk of a container's log
// (ControllerConn.Logs): the controller core's LogAsker.
func (p DeclarationPublisher) Logs(ctx context.Context, node string, req wire.LogRequest) (wire.LogChunk, error) {
	return p.c.Logs(ctx, node, req)
}

// ServeLogs answers the node's log requests with answer (agent.Logs on
// the node's runtime), each on a goroutine of its own, at most
// maxLogAnswers at once, until stop is called or the connection closes. A
// request that does not decode is answered with an error.
func (n *Node) ServeLogs(ctx context.Context, answer func(context.Context, wire.LogRequest) (wire.LogChunk, error)) (stop func(), err error) {
	slots := make(chan struct{}, maxLogAnswers)
	respond := func(m *nats.Msg, r logsReply) {
		r.Version = logsVersion
		b, merr := json.Marshal(r)
		if merr != nil {
			b, _ = json.Marshal(logsReply{Version: logsVersion, Error: merr.Error()})
		}
		if err := m.Respond(b); err != nil {
			n.log.Warn("bus: answer a log request", "err", err)
		}
	}
	sub, err := n.nc.Subscribe(LogsSubject(n.node), func(m *nats.Msg) {
		var req wire.LogRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			respond(m, logsReply{Error: fmt.Sprintf("bus: node %s: a log request that does not decode: %v", n.node, err)})
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			respond(m, logsReply{Error: fmt.Sprintf("bus: node %s: %d log requests are being answered already; ask again", n.node, maxLogAnswers)})
			return
		}
		go func() {
			defer func() { <-slots }()
			wait := time.Duration(req.WaitMillis) * time.Millisecond
			actx, cancel := context.WithTimeout(ctx, min(wait, wire.MaxLogWait)+logsMargin/2)
			defer cancel()
			var ch wire.LogChunk
			// A read that panics is answered with the panic, logged and
			// counted; the agent goes on answering.
			err := safego.Call("agent.logs", n.log, func() (aerr error) {
				ch, aerr = answer(actx, req)
				return aerr
			})
			if err != nil {
				respond(m, logsReply{Error: err.Error()})
				return
			}
			respond(m, logsReply{Chunk: &ch})
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("bus: node %s: serve log requests: %w", n.node, err)
	}
	if err := n.nc.FlushTimeout(10 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("bus: node %s: serve log requests: %w", n.node, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// ServeLogs answers the node's log requests (Node.ServeLogs): the running
// agent's LogServer.
func (l AgentLink) ServeLogs(ctx context.Context, answer func(context.Context, wire.LogRequest) (wire.LogChunk, error)) (func(), error) {
	return l.n.ServeLogs(ctx, answer)
}
