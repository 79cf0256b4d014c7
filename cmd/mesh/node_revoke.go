package main

import (
	"github.com/spf13/cobra"

	"meshplane/controller"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) nodeRevokeCmd() *cobra.Command {
	var credsFiles, keys []string
	cmd := &cobra.Command{
		Use:               "revoke NODE",
		Short:             "revoke every bus user of a node, at once",
		Long:              controller.RevokeHelp,
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(1, "name one node"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(cmd, true, nil, func(s *session.Session) error {
				res, err := s.Revoke(cmd.Context(), operator(), args[0], keys, credsFiles)
				if err != nil {
					return err
				}
				render.Revoked(e.stdout, res)
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&credsFiles, "creds", nil, "also revoke the user of this credentials `FILE` (one minted before its key was recorded); repeatable")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "also revoke the user of this public `KEY` (U...), recorded as the node's first; repeatable")
	return cmd
}
