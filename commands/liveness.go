package commands

import (
	"context"
	"fmt"
	"time"

	"meshplane/events"
)

// Liveness transitions (node.went-silent, node.came-back). The heartbeats
// themselves are never events: the controller keeps the last one of each
// node in memory and records only the transitions, so a node heard every
// few seconds for a year, or silent for a year, adds nothing. Each is
// decided against the node's stream (Node.Liveness): a node already silent
// does not go silent again, one that is not silent does not come back, so a
// controller that starts leading and finds a node silent in history, or
// asks twice, appends nothing more.

// WentSilent is what RecordWentSilent records.
type WentSilent struct {
	Node     string
	LastSeen time.Time     // its last heartbeat, by the controller's clock; zero: none heard
	Bound    time.Duration // how long a node may go unheard
}

// RecordWentSilent appends node.went-silent on the node's stream unless its
// last liveness event already is one (then nothing, and no error). A node
// never heard (no LastSeen, and nothing on its stream the node said: see
// Node.Heard) is not silent, whatever the time since its join: its agent
// may start later (`mesh agent install` prints how), and until its first
// heartbeat its sync is unreported; nothing is appended, and no error.
// A node that is not registered has no stream: a *Rejection with
// CodeNodeUnknown.
func (h *Handler) RecordWentSilent(ctx context.Context, s WentSilent) ([]events.Event, error) {
	n, err := h.livenessNode(ctx, s.Node)
	if err != nil || n.Liveness.Silent || (s.LastSeen.IsZero() && !n.Heard) {
		return nil, err
	}
	p := events.NodeWentSilent{Node: s.Node, Bound: s.Bound.String()}
	if !s.LastSeen.IsZero() {
		p.LastSeen = s.LastSeen.UTC()
	}
	return h.appendLiveness(ctx, n, p)
}

// RecordCameBack appends node.came-back on the node's stream, heard at at
// (the controller's clock), when its last liveness event is a
// node.went-silent; otherwise nothing, and no error.
func (h *Handler) RecordCameBack(ctx context.Context, node string, at time.Time) ([]events.Event, error) {
	n, err := h.livenessNode(ctx, node)
	if err != nil || !n.Liveness.Silent {
		return nil, err
	}
	silent := max(0, at.Sub(n.Liveness.SilentSince)).Round(time.Second)
	return h.appendLiveness(ctx, n, events.NodeCameBack{Node: node, LastSeen: at.UTC(), SilentFor: silent.String()})
}

func (h *Handler) livenessNode(ctx context.Context, node string) (Node, error) {
	if node == "" {
		return Node{}, reject(CodeNodeUnknown, "liveness of no node")
	}
	n, err := h.Node(ctx, node)
	if err != nil {
		return Node{}, fmt.Errorf("commands: liveness of %s: %w", node, err)
	}
	if !n.Registered {
		return Node{}, reject(CodeNodeUnknown, "liveness of %s: node %s is not registered", node, node)
	}
	return n, nil
}

// appendLiveness appends p at the node's version as read (n): a transition
// decided on a stale read is refused by the store, and asked again later.
func (h *Handler) appendLiveness(ctx context.Context, n Node, p events.Payload) ([]events.Event, error) {
	stream := events.NodeStream(n.Name)
	evs, err := h.events(stream, []events.Payload{p}, events.Meta{Actor: "controller"})
	if err != nil {
		return nil, err
	}
	stored, err := h.store.Append(ctx, stream, events.Exactly(n.Version), evs...)
	if err != nil {
		return nil, fmt.Errorf("commands: record %s of %s: %w", p.EventType(), n.Name, err)
	}
	return stored, nil
}
