package controller

import (
	"context"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
)

// RevertHelp is mesh revert's help.
const RevertHelp = `revert makes a module again what it was at a moment: its definition then and the builds
it ran then (image digest and configuration together), from the next push. --to is a time in
RFC 3339 (2026-09-29T22:46:00Z) or a store position (as mesh timeline and mesh export show
them); the module is taken as it stood after its last event at or before it.

Nothing in history changes: the revert appends a module.defined (when the definition differs
now) and a module.deployed "by revert" (when the builds differ), in one append, their causation
"revert MODULE --to MOMENT". A module removed since is defined again. A revert that changes
nothing appends nothing and says so; a moment before the module was first defined is refused
(exit 3), naming when it was. Plan it first: mesh plan --after "revert forge --to 41".`

// Revert makes a module again what it was at a moment (mesh revert): the
// module as its stream stood then (commands.Handler.ModuleAt), and what
// commands.RevertModule appends to make it so; the nodes it changes are
// pushed as after any command.
func (c *Controller) Revert(ctx context.Context, req api.RevertRequest) (api.RevertResult, error) {
	to, err := commands.ParseMoment(req.To)
	if err != nil {
		return api.RevertResult{}, err
	}
	if err := c.notBeforeFirst(ctx, "--to "+req.To, to); err != nil {
		return api.RevertResult{}, err
	}
	// Read before the append: the moment is one that has been, so what
	// the revert appends comes after it.
	then, err := c.handler.ModuleAt(ctx, req.Module, to)
	if err != nil {
		return api.RevertResult{}, err
	}
	res, err := c.execute(ctx, req.Operator, commands.RevertModule{Module: req.Module, To: to})
	if err != nil {
		return api.RevertResult{}, err
	}
	out := api.RevertResult{
		Module: req.Module, To: to.String(), Position: then.Position, At: then.At,
		SpecDigest: declaration.Digest(then.Module.Spec), Builds: then.Builds(), Events: []api.EventRef{},
	}
	if out.Builds == nil {
		out.Builds = []events.Build{}
	}
	if len(res.Results) > 0 {
		out.Events = res.Results[0].Events
	}
	return out, nil
}

// RevertFailedRollouts reverts, for each rollout.failed among evs whose
// action is revert (the module's on_failure: revert), its module to the
// position before the roll-out, its events' causation naming the failed
// roll-out (commands.RevertCause). A revert that cannot be made is logged
// and left: the rollout.failed stands, and nothing is tried again.
// RecordReport calls it; a simulation that records reports through the
// handler (package sim) calls it after.
func (c *Controller) RevertFailedRollouts(ctx context.Context, evs []events.Event) {
	for _, ev := range evs {
		if ev.Type != events.TypeRolloutFailed {
			continue
		}
		p, err := c.reg.Decode(ev)
		rf, ok := p.(events.RolloutFailed)
		if err != nil || !ok || rf.Action != events.RolloutRevert || rf.RevertTo == 0 {
			continue
		}
		cmd := commands.RevertModule{Module: rf.Module, To: commands.Moment{Position: rf.RevertTo}, After: ev.ID.String()}
		if _, err := c.execute(ctx, RolloutOperator, cmd); err != nil {
			c.log.Error("controller: revert after a failed roll-out", "module", rf.Module, "node", rf.Node, "rollout", ev.ID, "error", err)
		}
	}
}

// RolloutOperator is the operator the controller's own reverts after a
// failed roll-out are recorded as ("operator:rollout").
const RolloutOperator = "rollout"
