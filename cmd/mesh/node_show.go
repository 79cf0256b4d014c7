package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) nodeShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "show NODE",
		Short:             "one node: its status, its modules, its own holds and its last apply",
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(1, "name one node"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withQuery(cmd, func(s *session.Session) error {
				ns, err := s.Service.NodeShow(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				// The answer carries no skipped events: they are known locally only.
				return render.NodeShow(cmd.OutOrStdout(), render.Format(out), ns, s.Skipped(api.Skipped{}))
			})
		},
	}
	addOutput(cmd)
	return cmd
}
