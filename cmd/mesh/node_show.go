package main

import (
	"context"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
)

func (e *env) nodeShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "show NODE",
		Short:             "one node: its status, its modules, its own holds and its last apply",
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(1, "name one node"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ask(cmd, true, func(ctx context.Context, svc api.Service) (api.NodeShow, error) {
				return svc.NodeShow(ctx, args[0])
			}, render.NodeShow)
		},
	}
	addQuery(cmd)
	return cmd
}
