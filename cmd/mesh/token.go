package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
)

// The token group: per-operator API tokens, the controller's (--server).

func (e *env) tokenGroup() *cobra.Command {
	g := &cobra.Command{
		Use:   "token",
		Short: "per-operator API tokens: create, list, revoke",
		Long:  controller.TokenHelp,
	}
	g.AddCommand(e.tokenCreateCmd(), e.tokenListCmd(), e.tokenRevokeCmd())
	return g
}

// withTokens runs fn on the running controller's api.Tokens; local mode
// is refused before any store is opened.
func withTokens(cmd *cobra.Command, verb string, write bool, fn func(api.Tokens) error) error {
	t, err := targetOf(cmd, false)
	if err == nil && t.Server == "" {
		err = usagef("token %s needs --server (or MESH_SERVER): tokens are the running controller's", verb)
	}
	if err != nil {
		return err
	}
	return withSession(cmd, write, nil, func(s *session.Session) error {
		tk, ok := s.Service.(api.Tokens)
		if !ok {
			return errors.New("this client has no tokens")
		}
		return fn(tk)
	})
}

// tokenTTL is a token's lifetime flag: 0 (none) or a duration from 1s to
// api.MaxTokenTTLSeconds (87600h, 10 years).
func tokenTTL(s string) error {
	max := time.Duration(api.MaxTokenTTLSeconds) * time.Second
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || (d > 0 && d < time.Second) || d > max {
		return fmt.Errorf("want 0 (no expiry) or a duration from 1s to %dh, 10 years (720h)", int64(max/time.Hour))
	}
	return nil
}

func (e *env) tokenCreateCmd() *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "make an API token for the operator NAME (printed once)",
		Long:  controller.TokenCreateHelp,
		Args:  exactArgs(1, "name one operator"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTokens(cmd, "create", true, func(t api.Tokens) error {
				res, err := t.CreateToken(cmd.Context(), api.CreateTokenRequest{Operator: operator(), Name: args[0], TTLSeconds: int64(ttl / time.Second)})
				if err != nil {
					return err
				}
				render.TokenCreated(e.stdout, cmd.ErrOrStderr(), res)
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 720*time.Hour, "how long the token is good for (0: no expiry; at most 87600h, 10 years)")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"ttl": tokenTTL})
	return cmd
}

func (e *env) tokenListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "every API token, revoked ones too (never a secret)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withTokens(cmd, "list", false, func(t api.Tokens) error {
				list, err := t.Tokens(cmd.Context())
				if err != nil {
					return err
				}
				if out == outJSON {
					return render.WriteJSON(cmd.OutOrStdout(), list)
				}
				return render.Tokens(cmd.OutOrStdout(), list)
			})
		},
	}
	addOutput(cmd)
	return cmd
}

func (e *env) tokenRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "revoke the operator NAME's API token: refused at once from then on",
		Args:  exactArgs(1, "name one operator"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTokens(cmd, "revoke", true, func(t api.Tokens) error {
				res, err := t.RevokeToken(cmd.Context(), api.RevokeTokenRequest{Operator: operator(), Name: args[0]})
				if err != nil {
					return err
				}
				render.TokenRevoked(e.stdout, args[0], res)
				return nil
			})
		},
	}
}
