package main

import (
	"context"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/render"
)

func (e *env) diffCmd() *cobra.Command {
	var req api.DiffRequest
	cmd := &cobra.Command{
		Use: "diff --from TIME|POSITION [--to TIME|POSITION]", Long: controller.DiffHelp,
		Short: "what changed in the mesh between two moments, per node and per module",
		Args: func(cmd *cobra.Command, args []string) error {
			for flag, v := range map[string]string{"--from": req.From, "--to": req.To} {
				if _, err := commands.ParseMoment(v); err != nil && (v != "" || flag == "--from") {
					return usagef("%s: %v", flag, err)
				}
			}
			return noArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return ask(cmd, false, func(ctx context.Context, svc api.Service) (api.MeshDiff, error) { return svc.Diff(ctx, req) }, render.Diff)
		},
	}
	cmd.Flags().StringVar(&req.From, "from", "", "the `moment` to diff from: a time (RFC 3339) or a store position")
	cmd.Flags().StringVar(&req.To, "to", "", "the `moment` to diff to (default: the store's head)")
	addOutput(cmd)
	return cmd
}
