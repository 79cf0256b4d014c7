package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrSchemaTooNew means the database was migrated by a newer build than this
// one: it holds migrations this build does not know, so it refuses to touch
// it.
var ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this build")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// A migration is one file of migrations/, named NNNN_what.sql; NNNN is its
// version. Versions start at 1 and have no gaps.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("pgstore: migration file %s is not named NNNN_what.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: migration %s: version %d, want %d", m.name, m.version, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are fixed at build time; a test holds them
	}
	return len(ms)
}

// Migrate brings the database at url to this build's schema and returns the
// versions it applied (none when it was already there). Open calls it unless
// told not to; `mesh store migrate` calls it alone.
//
// It is safe to run twice and from several processes at once: it takes a
// transaction-scoped advisory lock first, then reads schema_migrations, and
// applies every missing migration and records it in that one transaction,
// so a second Migrate waits, then finds nothing to do; a failure leaves the
// database as it was.
func Migrate(ctx context.Context, url string) ([]int, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrate: connect: %w", err)
	}
	defer conn.Close(context.Background())
	return migrate(ctx, conn)
}

func migrate(ctx context.Context, conn *pgx.Conn) ([]int, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	var applied []int
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", lockClass, lockMigrate); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&current); err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		if current > len(ms) {
			return fmt.Errorf("%w: it is at version %d, this build knows %d", ErrSchemaTooNew, current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("record %s: %w", m.name, err)
			}
			applied = append(applied, m.version)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrate: %w", err)
	}
	return applied, nil
}
