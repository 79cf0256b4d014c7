package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
)

func (e *env) nodeRegisterCmd() *cobra.Command {
	var creds string
	cmd := &cobra.Command{
		Use:   "register NODE...",
		Short: "register nodes (all or none); --creds FILE also writes the node's bus credentials",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one node")
			}
			if creds != "" && len(args) != 1 {
				return usagef("--creds writes one node's credentials: name one node")
			}
			cs := make([]commands.Command, len(args))
			for i, n := range args {
				cs[i] = commands.RegisterNode{Node: n}
			}
			if err := e.execute(cmd, cs...); err != nil {
				return err
			}
			if creds != "" {
				return writeCreds(cmd, args[0], creds)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&creds, "creds", "", "write the node's bus credential `file` (mode 0600) for 'mesh agent --creds'")
	return cmd
}
