package main

import (
	"github.com/spf13/cobra"

	"meshplane/controller"
	"meshplane/internal/flagcheck"
	"meshplane/meshup"
)

// exitHeavy is mesh plan's exit code when a node's plan is heavy: it would
// create, replace or remove at least half of that node's resources, or of
// its containers (rule 7, events.Heavy), so a script or a CI gate stops
// before the push.
const exitHeavy = 4

// exitNotComposed is mesh plan's exit code when a node's declaration does
// not compose (two modules claim a name, a build not recorded, a read that
// failed): the push would send it nothing. It wins over exitHeavy.
const exitNotComposed = 5

// planCmd is mesh plan: what the next push would do, before it is done
// (seed 002: a data-path move and a build deployed by policy were both
// invisible until they took the forge down).
func (e *env) planCmd() *cobra.Command {
	var after []string
	cmd := &cobra.Command{
		Use:               "plan [NODE...]",
		Short:             "what the next push would do on each node, and why: nothing is appended (exit 4: a heavy plan; 5: a node does not compose)",
		Long:              controller.PlanHelp,
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := meshup.PlanRequest(args, after)
			if err != nil {
				return err
			}
			return runPlan(cmd, req)
		},
	}
	cmd.Flags().StringArrayVar(&after, "after", nil, "plan as if this `command` had run first (\"deploy forge\", \"assign route-proxy novox\", \"node set N K V\", \"module define FILE\"); repeatable")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"after": planAfter})
	addOutput(cmd)
	return cmd
}
