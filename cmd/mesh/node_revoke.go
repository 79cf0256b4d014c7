package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/bus"
	"meshplane/session"
)

func (e *env) nodeRevokeCmd() *cobra.Command {
	var credsFiles, keys []string
	cmd := &cobra.Command{
		Use:   "revoke NODE",
		Short: "revoke every bus user of a node, at once",
		Long: `Revoke every bus user of NODE that its history knows (its joins and the
credentials minted for it): node.credentials-revoked, and the bus's
revocation list, at once: the agent's connection is closed and a
reconnection refused, also after a restart. 'mesh node join-token NODE'
lets the host join again with a new key.

Credentials minted before their key was recorded (node.credentials-issued,
which older versions did not record) are unknown to history: name them
with --creds FILE (the credentials file, whose node must be NODE) or --key
U... (the user's public key), and they are recorded as NODE's, then
revoked with the rest.`,
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
				req := api.RevokeRequest{Operator: operator(), Node: args[0], PublicKeys: keys}
				for _, f := range credsFiles {
					node, pub, err := bus.CredsUser(f)
					if err != nil {
						return err
					}
					if node != args[0] {
						return usagef("--creds %s is node %s's, not %s's", f, node, args[0])
					}
					req.PublicKeys = append(req.PublicKeys, pub)
				}
				res, err := a.Revoke(cmd.Context(), req)
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
	cmd.Flags().StringArrayVar(&credsFiles, "creds", nil, "also revoke the user of this credentials `FILE` (one minted before its key was recorded); repeatable")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "also revoke the user of this public `KEY` (U...), recorded as the node's first; repeatable")
	return cmd
}
