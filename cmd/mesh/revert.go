package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) revertCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use: "revert MODULE --to TIME|POSITION", Long: controller.RevertHelp,
		Short: "make a module again what it was at a moment (its definition and the builds it ran), as new events",
		Args: func(cmd *cobra.Command, args []string) error {
			if _, err := commands.ParseMoment(to); err != nil {
				return usagef("--to: %v", err)
			}
			return exactArgs(1, "want MODULE")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(cmd, true, []commands.Command{commands.RevertModule{Module: args[0]}}, func(s *session.Session) error {
				res, err := s.Service.Revert(cmd.Context(), api.RevertRequest{Operator: operator(), Module: args[0], To: to})
				if err == nil {
					render.Reverted(cmd.OutOrStdout(), res)
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the `moment`: a time (RFC 3339) or a store position; the module as it stood after its last event at or before it")
	return cmd
}
