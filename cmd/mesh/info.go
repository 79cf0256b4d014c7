package main

import (
	"github.com/spf13/cobra"

	"meshplane/render"
	"meshplane/session"
)

// infoCmd shows the controller (or the local store) the CLI works on: its
// role (leader, standby, or local), version and positions.
func (e *env) infoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "info",
		Short: "the controller's role (leader, standby, local), version, store head and projection position",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				info, err := s.Service.Info(cmd.Context())
				if err != nil {
					return err
				}
				return render.Info(cmd.OutOrStdout(), render.Format(out), info)
			})
		},
	}
	addOutput(cmd)
	return cmd
}
