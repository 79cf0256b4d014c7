package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"meshplane/bus"
)

// busAccountDir, in the data directory, holds the trust `mesh bus account`
// makes for an external NATS cluster (bus.ExternalAccount's files).
const busAccountDir = "bus-account"

func (e *env) busAccountCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "account",
		Short: "the trust of an external NATS cluster for mesh up --nats: the servers' configuration and the controller's credentials",
		Long:  bus.AccountHelp,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, _ := cmd.Flags().GetString(flagData)
			dir := filepath.Join(data, busAccountDir)
			a, err := bus.LoadExternalAccount(dir)
			if err != nil {
				return err
			}
			conf, err := a.ServerConfig()
			if err != nil {
				return err
			}
			fmt.Fprint(e.stdout, conf)
			fmt.Fprintf(e.stderr, "mesh bus account: MESH account %s; in %s: the controller's %s (--nats-creds), the signing key %s (--nats-account-seed), the operator's signing key %s (--nats-operator-seed), the system user %s (--nats-system-creds), this configuration %s\n",
				a.AccountPublicKey(), dir, bus.ControllerCredsFile, "signing.nk", bus.OperatorSigningFile, bus.SystemCredsFile, bus.ServerConfFile)
			return nil
		},
	}
}
