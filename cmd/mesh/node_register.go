package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/internal/flagcheck"
	"meshplane/session"
)

func (e *env) nodeRegisterCmd() *cobra.Command {
	var creds string
	var busURLs []string
	cmd := &cobra.Command{
		Use:   "register NODE...",
		Short: "register nodes (all or none); --creds FILE also writes the node's bus credentials",
		Long:  session.RegisterHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one node")
			}
			if creds != "" && len(args) != 1 {
				return usagef("--creds writes one node's credentials: name one node")
			}
			if len(busURLs) > 0 && creds == "" {
				return usagef("--bus-url goes with --creds")
			}
			if t, err := targetOf(cmd, false); err == nil && creds != "" {
				if err := session.CheckMintable(t.Target, args[0]); err != nil {
					return err
				}
			}
			cs := make([]commands.Command, len(args))
			for i, n := range args {
				cs[i] = commands.RegisterNode{Node: n}
			}
			if err := e.execute(cmd, cs...); err != nil {
				return err
			}
			if creds != "" {
				data, _ := cmd.Flags().GetString(flagData)
				return withSession(cmd, true, nil, func(s *session.Session) error {
					return s.WriteNodeCreds(cmd.Context(), data, operator(), args[0], creds, busURLs)
				})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&creds, "creds", "", "write the node's bus credential `file` (mode 0600) for 'mesh agent --creds' (a device or FIFO is written through, a symbolic link or socket refused)")
	cmd.Flags().StringSliceVar(&busURLs, "bus-url", nil, "with --creds: the bus `URLs` the agent dials (default: those the controller names, with --server; else DATA/bus-urls of the running controller, else nats://127.0.0.1:4222)")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"bus-url": flagcheck.ListOf(flagcheck.URLOf("nats", "tls", "ws", "wss"))})
	return cmd
}
