package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"meshplane/events/storeurl"
	"meshplane/storeverify"
)

// errVerifyUnsupported is store verify's refusal of a store that is not the
// bolt file.
var errVerifyUnsupported = errors.New("store verify works on the bolt store only")

func (e *env) storeVerifyCmd() *cobra.Command {
	var agentData string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "check every record and index of the event store, and the cache files beside it; exit 1 on any damage (local store only)",
		Long: `Verify checks the bolt event store (DATA/events.db) read-only: bbolt's pages,
walked one by one, bbolt's own consistency check, every record's checksum and
position, the stream and id indexes against the records, and the head.

Then the cache files local queries keep beside it: DATA/projections.snap
(whole: its checksum, its content, and that it is of this store's history) and
DATA/timeline.db (whole: bbolt's pages and consistency, every entry's checksum,
every index against the entries), and that the two agree. It says of each
whether the next status, node show, timeline or churn resumes from it or
rebuilds it from the event store, and why.

Exit 1 on any damage: of the event store (restore it from a copy: verify says
what is lost), or of a cache file (nothing is lost: the next query, or mesh
rebuild now, rebuilds it; damage there still says the disk or something on
the machine scribbles on the data directory). A cache file that is only
stale (another format version, another history, missing) is reported and is
no failure.

With --agent-data DIR it checks an agent's data directory instead (on the
node: mesh agent --data DIR): every report kept in DIR/outbox and the agent's
state, checksums included, without changing anything. A damaged file is named
(exit 1); the agent moves it aside (NAME.damaged) and logs it when it next
reads its outbox.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			if agentData != "" {
				return e.verifyAgentData(agentData)
			}
			if kind, _ := storeurl.KindOf(t.store); kind != storeurl.Bolt {
				return fmt.Errorf("%w: mesh store verify checks the bolt file's pages, records and indexes; "+
					"a %s store is checked by its server (PostgreSQL: its own checksums and amcheck; KurrentDB: its scavenge and verification tools). "+
					"Give --store bolt (or none) to verify DATA/events.db", errVerifyUnsupported, kind)
			}
			return e.storeVerify(cmd.Context(), t.data)
		},
	}
	cmd.Flags().StringVar(&agentData, "agent-data", "", "check an agent's data directory (its outbox's reports and state) instead of the event store")
	return cmd
}

// verifyAgentData checks the agent outbox in the agent data directory
// dir and prints what it found.
func (e *env) verifyAgentData(dir string) error {
	rep, err := storeverify.Agent(filepath.Join(dir, outboxDir))
	if err != nil {
		return err
	}
	rep.WriteText(e.stdout)
	return rep.Err()
}

// storeVerify checks the store in data and the cache files beside it,
// prints what it checked and what is damaged, and fails on any damage.
func (e *env) storeVerify(ctx context.Context, data string) error {
	rep, err := storeverify.Data(ctx, data)
	if rep != nil {
		rep.WriteText(e.stdout)
	}
	if err != nil {
		return err
	}
	return rep.Err()
}
