package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/events/pgstore"
	"meshplane/events/storeurl"
	"meshplane/render"
)

func (e *env) storeMigrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "bring a PostgreSQL event store (--store postgres://...) to this build's schema; safe to run again",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			kind, _ := storeurl.KindOf(t.Store)
			switch kind {
			case storeurl.Postgres:
				applied, err := pgstore.Migrate(cmd.Context(), t.Store)
				if err != nil {
					return fmt.Errorf("migrate %s: %w", storeurl.Redact(t.Store), err)
				}
				render.Migrated(e.stdout, applied, pgstore.SchemaVersion())
				return nil
			case storeurl.Bolt:
				return usagef("mesh store migrate works on a PostgreSQL store: give --store postgres://... (the bolt file needs no migration: mesh up creates it, and it is checked when opened)")
			default:
				return usagef("mesh store migrate works on a PostgreSQL store: a %s store has no schema to migrate", kind)
			}
		},
	}
}
