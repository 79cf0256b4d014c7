package controllerd

import (
	"context"
	"errors"

	"meshplane/bus"
	"meshplane/controller"
	"meshplane/wire"
)

// Container logs (mesh logs) go through the publisher as dry runs do: the
// bus asks the node's agent.

var _ controller.LogAsker = bus.DeclarationPublisher{}

// Logs forwards to the bus's publisher once it is up.
func (l *laterPublisher) Logs(ctx context.Context, node string, req wire.LogRequest) (wire.LogChunk, error) {
	p := l.p.Load()
	if p == nil {
		return wire.LogChunk{}, errBusNotUp
	}
	return (*p).Logs(ctx, node, req)
}

// Logs forwards to the wrapped publisher's log requests, when it has them.
func (p notifyingPublisher) Logs(ctx context.Context, node string, req wire.LogRequest) (wire.LogChunk, error) {
	la, ok := p.Publisher.(controller.LogAsker)
	if !ok {
		return wire.LogChunk{}, errors.New("no log requests on this bus")
	}
	return la.Logs(ctx, node, req)
}
