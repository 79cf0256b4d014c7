package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"meshplane/bus"
	"meshplane/controllerd"
	"meshplane/internal/flagcheck"
)

func (e *env) busCheckCmd() *cobra.Command {
	var c controllerd.BusCheck
	cmd := &cobra.Command{
		Use:   "check",
		Short: "check the bus as meshplane needs it: server version, account limits, bucket and stream, node permissions",
		Long:  controllerd.BusCheckHelp,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Data, _ = cmd.Flags().GetString(flagData)
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			results, err := controllerd.CheckBus(ctx, c)
			for _, r := range results {
				fmt.Fprintln(e.stdout, r.Line())
			}
			if errors.Is(err, bus.ErrCheckFailed) {
				return &exitError{code: exitFailed}
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&c.URLs, "nats", nil, "the bus `URLs` (default: DATA/bus-urls of the embedded bus); with --nats-creds, an external cluster's")
	fs.StringVar(&c.NATSCreds, "nats-creds", "", "an external cluster: the controller user's NATS .creds `file` (mesh bus account writes one)")
	fs.StringVar(&c.NATSCA, "nats-ca", "", "the PEM `file` of the bus's CA when it is a private one")
	fs.StringVar(&c.NATSAccountSeed, "nats-account-seed", "", "an external cluster: a `file` holding a signing key seed (SA...) of the mesh account, to mint the throwaway node user with")
	flagcheck.Install(fs, map[string]flagcheck.Check{"nats": flagcheck.ListOf(flagcheck.URLOf("nats", "tls", "ws", "wss"))})
	return cmd
}
