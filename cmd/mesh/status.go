package main

import (
	"context"

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
			return ask(cmd, true, func(ctx context.Context, svc api.Service) (api.StatusResponse, error) {
				return svc.Status(ctx, api.StatusRequest{Nodes: args})
			}, render.StatusAnswer)
		},
	}
	addQuery(cmd)
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
