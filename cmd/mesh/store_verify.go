package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/events"
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
			if cmd.Flags().Changed("anchor") {
				// An empty or unparsable anchor (--anchor "$(cat head.txt)"
				// of a missing file) is a wrong command line, never a
				// plain verify.
				if strings.TrimSpace(anchor) == "" {
					return usagef("--anchor is empty: want the line mesh store head printed (meshplane-head position=N chain=sha256:HEX at=TIME); was its file missing?")
				}
				if _, err := events.ParseChainHead(anchor); err != nil {
					return usagef("--anchor: %v", err)
				}
				rep, err := storeverify.Anchored(cmd.Context(), t.Store, t.Data, anchor)
				if err != nil {
					return err
				}
				render.ChainReport(e.stdout, rep)
				if render.AnchorDiffers(rep) {
					return fmt.Errorf("%w: the history does not end at the anchor's chain value (position %d's chain is %s, the anchor says %s)",
						events.ErrChainBroken, rep.Anchor.Position, rep.Head.Chain, rep.Anchor.Chain)
				}
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
