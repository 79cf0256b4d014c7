package sim

import (
	"context"
	"fmt"

	"meshplane/agent"
	"meshplane/declaration"
)

// DryRun asks d's node, over the simulated bus, what it would do with d,
// without applying it (agent.Agent.DryRun): the plan's question, answered
// in process. A node whose bus is cut does not answer.
func (m *Mesh) DryRun(ctx context.Context, d declaration.Declaration) (agent.Preview, error) {
	n, err := m.node(d.Node)
	if err != nil {
		return agent.Preview{}, err
	}
	n.mu.Lock()
	cut := n.cut
	n.mu.Unlock()
	if cut {
		return agent.Preview{}, fmt.Errorf("bus to %s: %w", d.Node, ErrBusCut)
	}
	return n.Agent.DryRun(ctx, d)
}
