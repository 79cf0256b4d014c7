package main

import (
	"context"

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
behind each.` + session.SlowLocal,
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(2, "want NODE RESOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ask(cmd, false, func(ctx context.Context, svc api.Service) (api.WhyResponse, error) {
				return svc.Why(ctx, api.WhyRequest{Node: args[0], Resource: args[1]})
			}, render.Why)
		},
	}
	addQuery(cmd)
	return cmd
}
