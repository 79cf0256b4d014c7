package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/api"
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("name one node")
			}
			return withSession(cmd, true, nil, func(s *session.Session) error {
				a, ok := s.Service.(api.Access)
				if !ok {
					return fmt.Errorf("this client revokes nothing")
				}
				res, err := a.Revoke(cmd.Context(), api.NodeRequest{Operator: operator(), Node: args[0]})
				if err != nil {
					return err
				}
				if len(res.Revoked) == 0 {
					fmt.Fprintf(e.stdout, "node %s has no bus user left to revoke (%d revoked before); the bus has the list again\n", res.Node, len(res.All))
					return nil
				}
				for _, k := range res.Revoked {
					fmt.Fprintf(e.stdout, "revoked %s of node %s\n", k, res.Node)
				}
				return nil
			})
		},
	}
}
