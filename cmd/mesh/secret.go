package main

import (
	"github.com/spf13/cobra"

	"meshplane/render"
	"meshplane/secrets"
	"meshplane/session"
)

// The secret group: the controller's secret store (secrets.Help).
func (e *env) secretGroup() *cobra.Command {
	g := &cobra.Command{Use: "secret", Short: "secrets containers read: set (from stdin), list (never a value)", Long: secrets.Help}
	g.AddCommand(&cobra.Command{Use: "set NAME", Short: "set (or rotate) the secret NAME to the value on stdin", Long: secrets.SetHelp,
		Args: exactArgs(1, "name one secret"), RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(cmd, true, nil, func(s *session.Session) error {
				res, err := secrets.Set(cmd.Context(), s.Service, operator(), args[0], cmd.InOrStdin())
				render.CommandResult(e.stdout, res, nil)
				return err
			})
		}}, listCmd("list", "every secret: its digest, when set, the modules reading it (never a value)", noArgs, secrets.ListOf, render.SecretList))
	return g
}
