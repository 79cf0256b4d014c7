package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) pushCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "push [NODE]",
		Short:             "compose and push now, changed or not: one node, or every node (needs a controller: its bus)",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if len(args) > 1 {
				return usagef("name one node, or none for every node")
			}
			req := api.PushRequest{Operator: operator()}
			if len(args) == 1 {
				req.Node = args[0]
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				resp, err := s.Service.Push(cmd.Context(), req)
				if err != nil {
					return err
				}
				return render.Push(cmd.OutOrStdout(), render.Format(out), resp)
			})
		},
	}
	addOutput(cmd)
	return cmd
}
