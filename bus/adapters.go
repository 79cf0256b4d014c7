package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/declaration"
)

// This file adapts the bus to the interfaces its users define: the agent's
// Source and Reporter (package agent), and the controller's Publisher
// (package controller, checked in cmd/mesh so that bus does not link the
// controller). The agent's interfaces are imported: agent imports neither
// bus nor anything that does.

// AgentLink is a node's connection as a running agent needs it: the source
// of its declarations and the reporter of its applies (agent.Run).
type AgentLink struct{ n *Node }

var (
	_ agent.Source       = AgentLink{}
	_ agent.Reporter     = AgentLink{}
	_ agent.DryRunServer = AgentLink{}
	_ agent.RosterSource = AgentLink{}
)

// Agent returns n as an agent's Source and Reporter.
func (n *Node) Agent() AgentLink { return AgentLink{n: n} }

// Declarations watches the node's key (Node.Watch): the latest declaration
// at once, then each new one; the channel closes when ctx ends or the
// connection is closed.
func (l AgentLink) Declarations(ctx context.Context) (<-chan declaration.Declaration, error) {
	w, err := l.n.Watch(ctx)
	if err != nil {
		return nil, err
	}
	return w.Updates(), nil
}

// Rosters watches the mesh's shared roster value (Node.WatchRoster): the
// roster at once, if one was put, then each new one; the channel closes
// when ctx ends or the connection is closed. A node whose credentials may
// not read it (ErrRosterNotPermitted) gets a nil channel, and a warning
// says how to mend it: its heartbeats then say it holds no roster, so the
// controller sends it whole declarations, which need none.
func (l AgentLink) Rosters(ctx context.Context) (<-chan declaration.Roster, error) {
	w, err := l.n.WatchRoster(ctx)
	if errors.Is(err, ErrRosterNotPermitted) {
		l.n.log.Warn("bus: these credentials predate the shared roster: the controller will send this node its declarations whole; new credentials (mesh node join-token, then mesh agent join) let it read the roster once for the mesh", "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return w.Updates(), nil
}

// Secrets asks the controller for the values of want on the node's own
// subject (agent.SecretSource).
func (l AgentLink) Secrets(ctx context.Context, want []declaration.Secret) (map[string]string, error) {
	return l.n.Secrets(ctx, want)
}

// Report publishes r (in its wire form, Report.Wire) with its apply id as
// the message id, and returns once the stream stored it (Node.PublishReport).
// The node's connection does not buffer while the bus is away, so a report
// is either taken now or kept by the agent and sent again, late.
func (l AgentLink) Report(ctx context.Context, r agent.Report) (bool, error) {
	br, err := ReportOf(l.n.node, r)
	if err != nil {
		return false, err
	}
	return l.n.PublishReport(ctx, br)
}

// ReportOf turns an agent's report into its wire form: the compact outcome
// (agent.Report.Wire), the apply id, when, the correlation, and the failed
// attempts with the last error. A report that is not node's, or has no
// apply id, wraps ErrBadReport.
func ReportOf(node string, r agent.Report) (Report, error) {
	id, err := uuid.Parse(r.Outcome.ApplyID)
	if err != nil {
		return Report{}, fmt.Errorf("%w: apply id %q: %v", ErrBadReport, r.Outcome.ApplyID, err)
	}
	br := Report{
		Version: reportVersion, Node: node, ApplyID: id, AppliedAt: r.AppliedAt,
		Correlation: r.Correlation, Attempts: r.Attempts, LastError: r.LastError,
		Outcome: r.Wire(), Workload: r.Workload,
	}
	if err := br.check(); err != nil {
		return Report{}, err
	}
	return br, nil
}

// DeclarationPublisher is the controller's connection as the controller
// core's Publisher: it puts each pushed declaration under its node's key.
type DeclarationPublisher struct{ c *Controller }

// Publisher returns c as the controller core's Publisher.
func (c *Controller) Publisher() DeclarationPublisher { return DeclarationPublisher{c: c} }

// PutDeclaration makes d its node's latest declaration.
func (p DeclarationPublisher) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	_, err := p.c.PutDeclaration(ctx, d)
	return err
}

// PutDeclarations puts every one of ds, pipelined (Controller.PutDeclarations).
func (p DeclarationPublisher) PutDeclarations(ctx context.Context, ds []declaration.Declaration) []error {
	return p.c.PutDeclarations(ctx, ds)
}
