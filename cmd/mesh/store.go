package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"meshplane/events/boltstore"
)

// errDamageFound is store verify's failure: the report, printed, says what.
var errDamageFound = errors.New("the store file is damaged")

// cmdStoreVerify checks every record and index of the store, read-only (it
// runs beside other reads, not beside a writer), prints what it checked and
// what is damaged, and fails on any damage.
func cmdStoreVerify(ctx context.Context, e *env, args []string) error {
	fs := e.flags("store verify", "[--data DIR]")
	data := dataFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	path := filepath.Join(*data, "events.db")
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
