package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"meshplane/events/pgstore/pgtest"
)

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func appliedVersions(t *testing.T, url string) []int {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	return vs
}

func TestMigrationsEmbedded(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
}

// TestMigrateTwice: a second Migrate, and an Open after it, apply nothing.
func TestMigrateTwice(t *testing.T) {
	pgtest.Need(t, srv)
	url := srv.Database(t)
	ctx := testCtx(t, time.Minute)
	first, err := Migrate(ctx, url)
	if err != nil || len(first) != SchemaVersion() {
		t.Fatalf("first Migrate: applied %v, %v; want every migration", first, err)
	}
	second, err := Migrate(ctx, url)
	if err != nil || len(second) != 0 {
		t.Fatalf("second Migrate: applied %v, %v; want none", second, err)
	}
	openURL(t, url)
	if got := appliedVersions(t, url); len(got) != SchemaVersion() {
		t.Errorf("schema_migrations holds %v", got)
	}
}

// TestMigrateConcurrently: several processes' worth of Migrate at once on an
// empty database: every one succeeds, and each migration is applied once.
func TestMigrateConcurrently(t *testing.T) {
	pgtest.Need(t, srv)
	for _, n := range []int{2, 4} {
		t.Run(string(rune('0'+n))+" at once", func(t *testing.T) {
			url := srv.Database(t)
			ctx := testCtx(t, time.Minute)
			start := make(chan struct{})
			applied := make([][]int, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					applied[i], errs[i] = Migrate(ctx, url)
				})
			}
			close(start)
			wg.Wait()
			total := 0
			for i := range n {
				if errs[i] != nil {
					t.Errorf("Migrate %d: %v", i, errs[i])
				}
				total += len(applied[i])
			}
			if total != SchemaVersion() {
				t.Errorf("migrations applied %v in all, want each of %d once", applied, SchemaVersion())
			}
			if got := appliedVersions(t, url); len(got) != SchemaVersion() {
				t.Errorf("schema_migrations holds %v", got)
			}
		})
	}
}

// TestSchemaChecks: a database migrated by a newer build is refused, and
// WithoutMigrate refuses a database that needs migrating.
func TestSchemaChecks(t *testing.T) {
	pgtest.Need(t, srv)
	ctx := testCtx(t, time.Minute)

	t.Run("newer schema", func(t *testing.T) {
		url := srv.Database(t)
		if _, err := Migrate(ctx, url); err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')"); err != nil {
			t.Fatal(err)
		}
		if _, err := Migrate(ctx, url); !errors.Is(err, ErrSchemaTooNew) {
			t.Errorf("Migrate: got %v, want ErrSchemaTooNew", err)
		}
		for _, opts := range [][]Option{nil, {WithoutMigrate()}} {
			if s, err := Open(ctx, url, opts...); !errors.Is(err, ErrSchemaTooNew) {
				if s != nil {
					s.Close()
				}
				t.Errorf("Open(%d options): got %v, want ErrSchemaTooNew", len(opts), err)
			}
		}
	})
	t.Run("without migrate on an empty database", func(t *testing.T) {
		url := srv.Database(t)
		s, err := Open(ctx, url, WithoutMigrate())
		if err == nil {
			s.Close()
			t.Fatal("Open WithoutMigrate on an empty database succeeded")
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var absent bool
		if err := conn.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NULL AND to_regclass('events') IS NULL").Scan(&absent); err != nil {
			t.Fatal(err)
		}
		if !absent {
			t.Error("Open WithoutMigrate created tables")
		}
	})
}
