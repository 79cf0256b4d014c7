package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/events/pgstore"
	"meshplane/events/storeurl"
)

func (e *env) storeMigrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "bring a PostgreSQL event store (--store postgres://...) to this build's schema; safe to run again",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			kind, _ := storeurl.KindOf(t.store)
			switch kind {
			case storeurl.Postgres:
				return e.storeMigrate(cmd.Context(), t.store)
			case storeurl.Bolt:
				return usagef("mesh store migrate works on a PostgreSQL store: give --store postgres://... (the bolt file needs no migration: mesh up creates it, and it is checked when opened)")
			default:
				return usagef("mesh store migrate works on a PostgreSQL store: a %s store has no schema to migrate", kind)
			}
		},
	}
}

// storeMigrate applies the migrations the database at url lacks (none when
// it is at this build's version) and prints what it applied.
func (e *env) storeMigrate(ctx context.Context, url string) error {
	applied, err := pgstore.Migrate(ctx, url)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", storeurl.Redact(url), err)
	}
	if len(applied) == 0 {
		fmt.Fprintf(e.stdout, "schema at version %d already: nothing to apply\n", pgstore.SchemaVersion())
		return nil
	}
	for _, v := range applied {
		fmt.Fprintf(e.stdout, "applied migration %d\n", v)
	}
	fmt.Fprintf(e.stdout, "schema at version %d\n", pgstore.SchemaVersion())
	return nil
}
