package main

import (
	"fmt"
	"meshplane/session"

	"github.com/spf13/cobra"
)

// infoCmd shows the controller (or the local store) the CLI works on: its
// role (leader, standby, or local), version and positions.
func (e *env) infoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "info",
		Short: "the controller's role (leader, standby, local), version, store head and projection position",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				info, err := s.Service.Info(cmd.Context())
				if err != nil {
					return err
				}
				if out == outJSON {
					return writeJSON(e.stdout, info)
				}
				tw := table(e.stdout)
				fmt.Fprintf(tw, "role\t%s\n", info.Role)
				fmt.Fprintf(tw, "version\t%s\n", info.Version)
				if !info.Started.IsZero() {
					fmt.Fprintf(tw, "started\t%s\n", stamp(info.Started))
				}
				fmt.Fprintf(tw, "store head\t%d\n", info.StoreHead)
				fmt.Fprintf(tw, "projection position\t%d\n", info.ProjectionPosition)
				fmt.Fprintf(tw, "nodes\t%d\n", info.Nodes)
				if info.Interval != "" {
					fmt.Fprintf(tw, "interval\t%s\n", info.Interval)
				}
				fmt.Fprintf(tw, "publishing\t%t\n", info.Publishing)
				return tw.Flush()
			})
		},
	}
	addOutput(cmd)
	return cmd
}
