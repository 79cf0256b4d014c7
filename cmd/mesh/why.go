package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) whyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "why NODE RESOURCE",
		Short: "why a resource on a node is as it is: every apply that touched it, and the push behind each",
		Long: `Why a resource on a node is as it is: every apply that touched it, and the push
behind each.` + slowLocal,
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if len(args) != 2 {
				return usagef("want NODE RESOURCE")
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				resp, err := s.Service.Why(cmd.Context(), api.WhyRequest{Node: args[0], Resource: args[1]})
				if err != nil {
					return err
				}
				// The answer carries no skipped events: they are known locally only.
				return render.Why(cmd.OutOrStdout(), render.Format(out), resp, s.Skipped(api.Skipped{}))
			})
		},
	}
	addOutput(cmd)
	return cmd
}
