package agent

import (
	"context"
	"fmt"

	"meshplane/declaration"
)

// DryRun is Apply without the doing: it observes the node and plans d
// (Diff, with the agent's State) exactly as Apply would now, and returns
// the Preview. It changes nothing on the node, in the State or in the
// outbox, and makes no report; it asks a runtime that pulls whether each
// image the plan needs is present or pullable (Preview.Images). Like
// Apply, it refuses a declaration for another node or with duplicate
// names, and fails when the node cannot be observed.
func (a *Agent) DryRun(ctx context.Context, d declaration.Declaration) (Preview, error) {
	plan, err := a.dryPlan(ctx, d)
	if err != nil {
		return Preview{}, err
	}
	pv := PreviewOf(a.cfg.Node, d, plan)
	// Registries are asked after the lock (an apply never waits on one),
	// all at once, within ImageCheckBudget.
	pv.Images = checkImages(ctx, a.cfg.Runtime, plan)
	return pv, nil
}

// dryPlan is DryRun's plan, under the agent's lock.
func (a *Agent) dryPlan(ctx context.Context, d declaration.Declaration) (Plan, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(d); err != nil {
		return Plan{}, err
	}
	if d.NamesRoster() {
		return Plan{}, fmt.Errorf("agent: dry run %s: names roster revision %d, which it does not carry: %w", d.ID, d.RosterRevision, declaration.ErrRosterNotHeld)
	}
	obs, err := Observe(ctx, a.cfg.Runtime, d)
	if err != nil {
		return Plan{}, fmt.Errorf("agent: dry run %s: %w", d.ID, err)
	}
	return Diff(d, obs, a.state), nil
}
