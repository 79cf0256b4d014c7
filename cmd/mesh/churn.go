package main

import (
	"context"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
)

func (e *env) churnCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "churn [NODE...]",
		Short:             "churn loops and flips, open and past, with their evidence",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			return ask(cmd, true, func(ctx context.Context, svc api.Service) (api.ChurnResponse, error) {
				return svc.Churn(ctx, api.ChurnRequest{Nodes: args})
			}, render.Churn)
		},
	}
	addQuery(cmd)
	return cmd
}
