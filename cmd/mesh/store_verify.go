package main

import (
	"github.com/spf13/cobra"

	"meshplane/render"
	"meshplane/storeverify"
)

func (e *env) storeVerifyCmd() *cobra.Command {
	var agentData, anchor string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "check every record and index of the event store, and the cache files beside it; exit 1 on any damage (local store only)",
		Long:  storeverify.Help,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			if agentData != "" {
				return storeverify.AgentText(render.SafeWriter(e.stdout), agentData)
			}
			if anchor != "" {
				rep, err := storeverify.Anchored(cmd.Context(), t.Store, t.Data, anchor)
				if err != nil {
					return err
				}
				render.ChainReport(e.stdout, rep)
				return rep.Err()
			}
			if err := storeverify.Supported(t.Store); err != nil {
				return err
			}
			return storeverify.DataText(cmd.Context(), render.SafeWriter(e.stdout), t.Data)
		},
	}
	cmd.Flags().StringVar(&anchor, "anchor", "", "check the hash chain of the store (any kind) against a head line of mesh store head, and name the first position not intact")
	cmd.Flags().StringVar(&agentData, "agent-data", "", "check an agent's data directory (its outbox's reports and state) instead of the event store")
	return cmd
}
