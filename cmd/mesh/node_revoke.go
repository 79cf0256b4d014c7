package main

import (
	"github.com/spf13/cobra"

	"meshplane/render"
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
