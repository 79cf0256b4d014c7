package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"meshplane/events/boltstore"
)

// errDamageFound is store verify's failure: the report, printed, says what.
var errDamageFound = errors.New("the store file is damaged")

// errVerifyUnsupported is store verify's refusal of a store that is not the
// bolt file.
var errVerifyUnsupported = errors.New("store verify works on the bolt store only")

func (e *env) storeVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "check every record and index of the event store; exit 1 on any damage (local store only)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			if kind, _ := storeKindOf(t.store); kind != storeBolt {
				return fmt.Errorf("%w: mesh store verify checks the bolt file's pages, records and indexes; "+
					"a %s store is checked by its server (PostgreSQL: its own checksums and amcheck; KurrentDB: its scavenge and verification tools). "+
					"Give --store bolt (or none) to verify DATA/events.db", errVerifyUnsupported, kind)
			}
			return e.storeVerify(cmd.Context(), t.data)
		},
	}
}

// storeVerify checks every record and index of the store, read-only (it
// runs beside other reads, not beside a writer), prints what it checked and
// what is damaged, and fails on any damage.
func (e *env) storeVerify(ctx context.Context, data string) error {
	path := filepath.Join(data, "events.db")
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
	if rep.OK() {
		fmt.Fprintln(w, "no damage found")
		return nil
	}
	fmt.Fprintf(w, "\ndamaged (%d):\n", len(rep.Damage)+rep.MoreDamage)
	for _, d := range rep.Damage {
		fmt.Fprintf(w, "  %s\n", d)
	}
	if rep.MoreDamage > 0 {
		fmt.Fprintf(w, "  ... and %d more\n", rep.MoreDamage)
	}
	return fmt.Errorf("%w: %d problem(s), listed above", errDamageFound, len(rep.Damage)+rep.MoreDamage)
}
