package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"meshplane/declaration"
	"meshplane/internal/safego"
	"meshplane/wire"
)

// Dry runs (mesh plan). The controller asks a node's agent what it would do
// with a declaration, without applying it: a NATS request on
// PlanSubject(node), answered by the agent only (NodePermissions lets a
// node subscribe to its own plan subject and answer what it received).
//
// The request is the declaration, as JSON (the same form the bucket
// holds). The reply is one JSON object:
//
//	{"version": 1, "preview": {...wire.Preview...}}
//	{"version": 1, "error": "agent: dry run novox/4: observe: list containers: ..."}
//
// A node with no agent connected gives no responder at once (ErrNoAgent);
// one that does not answer in time is the caller's deadline. Nothing is
// stored on the bus either way.

// ErrNoAgent means no agent of the node is connected to answer.
var ErrNoAgent = errors.New("bus: no agent of the node is connected")

// dryRunVersion is the version of the dry-run reply.
const dryRunVersion = 1

// DefaultDryRunAnswer bounds how long an agent takes over one dry run.
const DefaultDryRunAnswer = 30 * time.Second

type dryRunReply struct {
	Version int           `json:"version"`
	Preview *wire.Preview `json:"preview,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// DryRun asks d's node's agent what it would do with d (wire.Preview),
// waiting until ctx ends. No agent connected is ErrNoAgent; an agent that
// could not plan (it could not observe its node) is its error. A
// declaration naming the roster last put as the shared value travels
// as a pushed one does (without it, to a node that holds a roster:
// wireOf); any other carries its roster.
func (c *ControllerConn) DryRun(ctx context.Context, d declaration.Declaration) (wire.Preview, error) {
	if err := ValidNode(d.Node); err != nil {
		return wire.Preview{}, err
	}
	c.rosterMu.Lock()
	put := c.rosterPut
	c.rosterMu.Unlock()
	if d.RosterRevision != 0 && (rosterPut{revision: d.RosterRevision, digest: d.RosterDigest}) == put {
		d = c.wireOf(d)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return wire.Preview{}, fmt.Errorf("bus: dry run on %s: %w", d.Node, err)
	}
	msg, err := c.nc.RequestWithContext(ctx, PlanSubject(d.Node), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.Preview{}, fmt.Errorf("bus: dry run on %s: %w", d.Node, ErrNoAgent)
	case errors.Is(err, context.DeadlineExceeded):
		return wire.Preview{}, fmt.Errorf("bus: dry run on %s: its agent did not answer in time: %w", d.Node, err)
	case err != nil:
		return wire.Preview{}, fmt.Errorf("bus: dry run on %s: %w", d.Node, err)
	}
	pv, err := DecodeDryRunReply(d.Node, msg.Data)
	if err != nil {
		return wire.Preview{}, fmt.Errorf("bus: dry run on %s: %w", d.Node, err)
	}
	return pv, nil
}

// ErrBadDryRun means a dry-run reply did not decode, or is not of the node
// asked.
var ErrBadDryRun = errors.New("bus: bad dry-run reply")

// DecodeDryRunReply decodes node's reply to a dry run: its preview, or the
// agent's error (wrapping ErrDryRunFailed). A reply that does not decode, has
// neither, or is a preview of another node wraps ErrBadDryRun.
func DecodeDryRunReply(node string, b []byte) (wire.Preview, error) {
	var r dryRunReply
	if err := json.Unmarshal(b, &r); err != nil {
		return wire.Preview{}, fmt.Errorf("%w: %v", ErrBadDryRun, err)
	}
	switch {
	case r.Error != "":
		return wire.Preview{}, fmt.Errorf("%w: %s", ErrDryRunFailed, r.Error)
	case r.Preview == nil:
		return wire.Preview{}, fmt.Errorf("%w: version %d, without a preview", ErrBadDryRun, r.Version)
	case r.Preview.Node != node:
		return wire.Preview{}, fmt.Errorf("%w: a preview of node %q", ErrBadDryRun, r.Preview.Node)
	}
	return *r.Preview, nil
}

// ErrDryRunFailed means the node's agent answered that it could not plan
// (it could not observe its node); the error says why.
var ErrDryRunFailed = errors.New("the agent could not plan")

// DryRun asks d's node's agent for a dry run (Controller.DryRun): the
// controller core's DryRunner.
func (p DeclarationPublisher) DryRun(ctx context.Context, d declaration.Declaration) (wire.Preview, error) {
	return p.c.DryRun(ctx, d)
}

// ServeDryRuns answers the node's dry-run requests with answer (the
// agent's DryRun), each within DefaultDryRunAnswer, until stop is called or
// the connection closes. A request that is not a declaration for this node
// is answered with an error.
func (n *Node) ServeDryRuns(ctx context.Context, answer func(context.Context, declaration.Declaration) (wire.Preview, error)) (stop func(), err error) {
	sub, err := n.nc.Subscribe(PlanSubject(n.node), func(m *nats.Msg) {
		var r dryRunReply
		r.Version = dryRunVersion
		d, err := decodeDeclaration(n.node, m.Data)
		if err == nil {
			actx, cancel := context.WithTimeout(ctx, DefaultDryRunAnswer)
			var pv wire.Preview
			// A dry run that panics is answered with the panic, logged
			// and counted; the agent goes on answering.
			err = safego.Call("agent.dryrun", n.log, func() (aerr error) {
				pv, aerr = answer(actx, d)
				return aerr
			})
			cancel()
			r.Preview = &pv
		}
		if err != nil {
			r.Preview, r.Error = nil, err.Error()
		}
		b, merr := json.Marshal(r)
		if merr != nil {
			b, _ = json.Marshal(dryRunReply{Version: dryRunVersion, Error: merr.Error()})
		}
		if err := m.Respond(b); err != nil {
			n.log.Warn("bus: answer a dry run", "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("bus: node %s: serve dry runs: %w", n.node, err)
	}
	if err := n.nc.FlushTimeout(10 * time.Second); err != nil { // the server has the subscription
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("bus: node %s: serve dry runs: %w", n.node, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// ServeDryRuns answers the node's dry-run requests (Node.ServeDryRuns): the
// running agent's DryRunServer.
func (l AgentLink) ServeDryRuns(ctx context.Context, answer func(context.Context, declaration.Declaration) (wire.Preview, error)) (func(), error) {
	return l.n.ServeDryRuns(ctx, answer)
}
