package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"meshplane/bus"
	"meshplane/daemon"
	"meshplane/internal/flagcheck"
)

func (e *env) busCheckCmd() *cobra.Command {
	var c daemon.BusCheck
	cmd := &cobra.Command{
		Use:   "check",
		Short: "check the bus as meshplane needs it: server version, account limits, bucket and stream, node permissions",
		Long: `mesh bus check connects to the bus with the controller's user and prints one line
per check (ok, FAIL, skip): the server's version; the mesh account's JetStream
consumer limit (a bound, not unlimited); the declarations bucket's stream
(republishing to mesh.decl.>, direct gets, at most 16 consumers) and the
reports stream (work queue, at most 4 consumers), both made by the controller
at its start; and that a node's user cannot create a JetStream consumer (a
throwaway node user, expiring in a minute, tries).

Without --nats it checks the embedded bus of the controller on --data (its
trust root in DATA/bus, its URLs in DATA/bus-urls). With --nats URL and
--nats-creds FILE it checks an external cluster as mesh up --nats reaches
it; --nats-account-seed lets it mint the node user (else that check is
skipped). Exit 0 when every check passed, 1 when one failed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Data, _ = cmd.Flags().GetString(flagData)
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			results, err := daemon.CheckBus(ctx, c)
			for _, r := range results {
				mark := "ok  "
				switch {
				case r.Skipped:
					mark = "skip"
				case !r.OK:
					mark = "FAIL"
				}
				fmt.Fprintf(e.stdout, "%s  %s: %s\n", mark, r.Name, r.Detail)
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
