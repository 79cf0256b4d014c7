package controller

import (
	"context"
	"slices"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/projections"
)

// Deploy makes compose run a module's recorded builds (mesh deploy): a
// build is not a deployment (seed 002), so a manual module's new build
// reaches its nodes only through this. The nodes it changes are pushed as
// after any command.
func (c *Controller) Deploy(ctx context.Context, req api.DeployRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.DeployModule{Module: req.Module, Digest: req.Digest})
}

// deployBehind is, for a touch that created a container or replaced its
// image, the deploy and the build behind it, if its module runs a deployed
// build (seed 002: which deploy, or which roll-out, put that build there).
func deployBehind(tl *projections.Timeline, node, resource string, t projections.Touch) ([]projections.Entry, error) {
	switch {
	case t.Action == projections.ActionCreated:
	case t.Action == projections.ActionReplaced && slices.Contains(t.Fields, "image"):
	default:
		return nil, nil
	}
	return tl.DeployBehind(node, resource, t.Entry.Position)
}
