package agent

import (
	"context"
	"fmt"

	"meshplane/declaration"
)

// DryRun is Apply without the doing: it observes the node and plans d
// (Diff, with the agent's State) exactly as Apply would now, and returns
// the Preview. It changes nothing on the node, in the State or in the
// outbox, and makes no report. Like Apply, it refuses a declaration for
// another node or with duplicate names, and fails when the node cannot be
// observed.
func (a *Agent) DryRun(ctx context.Context, d declaration.Declaration) (Preview, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(d); err != nil {
		return Preview{}, err
	}
	if d.NamesRoster() {
		return Preview{}, fmt.Errorf("agent: dry run %s: names roster revision %d, which it does not carry: %w", d.ID, d.RosterRevision, declaration.ErrRosterNotHeld)
	}
	obs, err := Observe(ctx, a.cfg.Runtime, d)
	if err != nil {
		return Preview{}, fmt.Errorf("agent: dry run %s: %w", d.ID, err)
	}
	return PreviewOf(a.cfg.Node, d, Diff(d, obs, a.state)), nil
}
