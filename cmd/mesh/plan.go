package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
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
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				resp, err := s.Service.Plan(cmd.Context(), api.PlanRequest{Nodes: args, After: after})
				if err != nil {
					return err
				}
				if err := render.Plan(cmd.OutOrStdout(), render.Format(out), resp); err != nil {
					return err
				}
				if len(resp.NotComposed()) > 0 {
					return &exitError{exitNotComposed}
				}
				if resp.Heavy {
					return &exitError{exitHeavy}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&after, "after", nil, "plan as if this `command` had run first (\"deploy forge\", \"assign route-proxy novox\"); repeatable")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"after": planAfter})
	addOutput(cmd)
	return cmd
}
