package controller

import (
	"context"

	"meshplane/api"
	"meshplane/commands"
)

// Deploy makes compose run a module's recorded builds (mesh deploy): a
// build is not a deployment (seed 002), so a manual module's new build
// reaches its nodes only through this. The nodes it changes are pushed as
// after any command.
func (c *Controller) Deploy(ctx context.Context, req api.DeployRequest) (api.CommandResult, error) {
	return c.execute(ctx, req.Operator, commands.DeployModule{Module: req.Module, Digest: req.Digest})
}
