package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/internal/flagcheck"
)

// deployCmd is mesh deploy (commands.DeployHelp).
func (e *env) deployCmd() *cobra.Command {
	var digest string
	cmd := &cobra.Command{
		Use:   "deploy MODULE",
		Short: "deploy a module's latest recorded builds (or, with --digest, one recorded build): the next push runs them",
		Long:  commands.DeployHelp,
		Args:  exactArgs(1, "want MODULE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.execute(cmd, commands.DeployModule{Module: args[0], Digest: digest})
		},
	}
	cmd.Flags().StringVar(&digest, "digest", "", "deploy the recorded build with this `digest` (sha256:...), of whichever artifact it is; a roll-back too")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"digest": flagcheck.Optional(commands.CheckDigest)})
	return cmd
}
