package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/agent"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/projections/snapstore"
)

// errDamageFound is store verify's failure: the report, printed, says what.
var errDamageFound = errors.New("the store file is damaged")

// errCacheDamaged is store verify's failure when the event store is sound
// but a cache file beside it is damaged (the report says which; nothing is
// lost, the next query rebuilds it).
var errCacheDamaged = errors.New("a cache file beside the store is damaged")

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

// errAgentDataDamaged is store verify's failure on a damaged file of an
// agent's data directory.
var errAgentDataDamaged = errors.New("a file of the agent's outbox is damaged")

// verifyAgentData checks the outbox of the agent data directory dir (see
// agent.CheckOutbox) and prints what it found.
func (e *env) verifyAgentData(dir string) error {
	path := filepath.Join(dir, outboxDir)
	c, err := agent.CheckOutbox(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no agent outbox at %s (give the agent's --data)", path)
	}
	if err != nil {
		return err
	}
	w := e.stdout
	fmt.Fprintf(w, "agent outbox %s\n", path)
	fmt.Fprintf(w, "  reports kept: %d, each with a matching checksum", c.Reports)
	if c.Legacy > 0 {
		fmt.Fprintf(w, " (%d of version 1, without one to check)", c.Legacy)
	}
	fmt.Fprintf(w, "\n  state: %s\n", c.State)
	for _, a := range c.Aside {
		fmt.Fprintf(w, "  passed over before: %s (moved aside, never read)\n", a)
	}
	if len(c.Damaged) == 0 {
		fmt.Fprintln(w, "no damage found")
		return nil
	}
	fmt.Fprintf(w, "\ndamaged (%d): the agent moves each aside and logs it when it next reads its outbox\n", len(c.Damaged))
	for _, d := range c.Damaged {
		fmt.Fprintf(w, "  %s\n", d)
	}
	return fmt.Errorf("%w: %d file(s), listed above", errAgentDataDamaged, len(c.Damaged))
}

// storeVerify checks every record and index of the store, read-only (it
// runs beside other reads, not beside a writer), prints what it checked and
// what is damaged, and fails on any damage.
func (e *env) storeVerify(ctx context.Context, data string) error {
	path := storeurl.Path(data)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no event store at %s (run 'mesh up' first, or pass --data)", path)
	}
	rep, err := boltstore.Verify(ctx, path)
	if err != nil {
		return err
	}
	w := e.stdout
	fmt.Fprintf(w, "store %s: %d bytes", rep.Path, rep.Size)
	if rep.Layout != 0 {
		fmt.Fprintf(w, ", layout %d, head %d", rep.Layout, rep.Head)
	}
	fmt.Fprintln(w)
	for _, c := range rep.Checked {
		fmt.Fprintf(w, "  %s\n", c)
	}
	if !rep.OK() {
		fmt.Fprintf(w, "\ndamaged (%d):\n", len(rep.Damage)+rep.MoreDamage)
		for _, d := range rep.Damage {
			fmt.Fprintf(w, "  %s\n", d)
		}
		if rep.MoreDamage > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", rep.MoreDamage)
		}
		fmt.Fprintln(w, "\ncache files: not checked (they are checked against the event store)")
		return fmt.Errorf("%w: %d problem(s), listed above", errDamageFound, len(rep.Damage)+rep.MoreDamage)
	}
	fmt.Fprintln(w, "no damage found")
	return e.verifyCaches(ctx, data)
}

// verifyCaches checks the cache files beside the store in data (see
// snapstore.Verify) and prints what it found; a damaged one is
// errCacheDamaged.
func (e *env) verifyCaches(ctx context.Context, data string) error {
	w := e.stdout
	store, err := storeurl.Open(ctx, string(storeurl.Bolt), storeurl.Options{Data: data, ReadOnly: true})
	if err != nil {
		return err
	}
	defer store.Close()
	reps, err := snapstore.Verify(ctx, store, events.NewRegistry(), data)
	if err != nil {
		return err
	}
	var damaged []string
	for _, r := range reps {
		fmt.Fprintf(w, "\ncache %s: ", r.Path)
		switch {
		case r.Missing && r.Name == snapstore.SnapshotFile:
			fmt.Fprintln(w, "none yet (local queries save one once they fold more than 1,024 new events)")
			continue
		case r.Missing:
			fmt.Fprintln(w, "none yet (the next status, node show, timeline or churn makes it)")
			continue
		case r.Damage == "" && r.Rebuild == "":
			fmt.Fprintf(w, "%d bytes, position %d\n", r.Size, r.Position)
		default:
			fmt.Fprintf(w, "%d bytes\n", r.Size)
		}
		for _, c := range r.Checked {
			fmt.Fprintf(w, "  %s\n", c)
		}
		switch {
		case r.Damage != "":
			fmt.Fprintf(w, "  DAMAGED: %s\n  the next query removes it and rebuilds it from the event store (mesh rebuild does it now)\n", r.Damage)
			damaged = append(damaged, r.Name)
		case r.Rebuild != "":
			fmt.Fprintf(w, "  the next query rebuilds it: %s\n", r.Rebuild)
		case r.Position == 0:
			fmt.Fprintln(w, "  sound, and empty")
		default:
			fmt.Fprintln(w, "  sound: local queries resume from it")
		}
	}
	if len(damaged) > 0 {
		return fmt.Errorf("%w: %s (the event store is sound: nothing is lost; mesh rebuild rebuilds it)", errCacheDamaged, strings.Join(damaged, ", "))
	}
	return nil
}
