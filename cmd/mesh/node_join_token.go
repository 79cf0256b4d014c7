package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) nodeJoinTokenCmd() *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:               "join-token NODE",
		Short:             "a one-time token for a host to join as NODE (registered if needed)",
		Long:              controller.JoinTokenHelp,
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(1, "name one node"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < time.Second || ttl > api.MaxJoinTTL {
				return usagef("--ttl %s: give 1s to %s", ttl, api.MaxJoinTTL)
			}
			return withSession(cmd, true, nil, func(s *session.Session) error {
				a, ok := s.Service.(api.Access)
				if !ok {
					return fmt.Errorf("this client issues no join tokens")
				}
				res, err := a.JoinToken(cmd.Context(), api.JoinTokenRequest{Operator: operator(), Node: args[0], TTLSeconds: int64(ttl / time.Second)})
				if err != nil {
					return err
				}
				render.JoinToken(e.stdout, cmd.ErrOrStderr(), res)
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", api.DefaultJoinTTL, "how long the token is good for (at most 168h)")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"ttl": joinTTL})
	return cmd
}

// joinTTL is a join token's lifetime: 1s to api.MaxJoinTTL.
func joinTTL(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d > api.MaxJoinTTL {
		return fmt.Errorf("want a duration from 1s to %s (15m, 1h)", api.MaxJoinTTL)
	}
	return nil
}
