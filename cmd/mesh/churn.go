package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) churnCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "churn [NODE...]",
		Short:             "churn loops and flips, open and past, with their evidence",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withQuery(cmd, func(s *session.Session) error {
				resp, err := s.Service.Churn(cmd.Context(), api.ChurnRequest{Nodes: args})
				if err != nil {
					return err
				}
				// The answer carries no skipped events: they are known locally only.
				return render.Churn(cmd.OutOrStdout(), render.Format(out), resp, s.Skipped(api.Skipped{}))
			})
		},
	}
	addOutput(cmd)
	return cmd
}
