package main

import (
	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) statusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "status [NODE...]",
		Short:             "each node's sync and health, with held counts per module",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withQuery(cmd, func(s *session.Session) error {
				resp, err := s.Service.Status(cmd.Context(), api.StatusRequest{Nodes: args})
				if err != nil {
					return err
				}
				resp.Skipped = s.Skipped(resp.Skipped)
				return render.Status(cmd.OutOrStdout(), render.Format(out), resp)
			})
		},
	}
	addOutput(cmd)
	return cmd
}

// completeNodes completes node names from the mesh the command would ask
// (nothing when it cannot be asked).
func completeNodes(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var names []string
	_ = withQuery(cmd, func(s *session.Session) error {
		resp, err := s.Service.Status(cmd.Context(), api.StatusRequest{})
		for _, st := range resp.Nodes {
			names = append(names, st.Node)
		}
		return err
	})
	return names, cobra.ShellCompDirectiveNoFileComp
}
