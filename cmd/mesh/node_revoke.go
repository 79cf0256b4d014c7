package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) nodeRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NODE",
		Short: "revoke every bus user of a node, at once",
		Long: `Revoke every bus user of NODE that its history knows (its joins and the
credentials minted for it): node.credentials-revoked, and the bus's
revocation list, at once: the agent's connection is closed and a
reconnection refused, also after a restart. 'mesh node join-token NODE'
lets the host join again with a new key.`,
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(1, "name one node"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(cmd, true, nil, func(s *session.Session) error {
				a, ok := s.Service.(api.Access)
				if !ok {
					return fmt.Errorf("this client revokes nothing")
				}
				res, err := a.Revoke(cmd.Context(), api.NodeRequest{Operator: operator(), Node: args[0]})
				if err != nil {
					return err
				}
				render.Revoked(e.stdout, res)
				return nil
			})
		},
	}
}
