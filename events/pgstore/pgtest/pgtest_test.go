package pgtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"meshplane/events/pgstore/pgtest"
)

// TestStartStopStart: a cluster answers, goes away when stopped, and comes
// back with its data when started again.
func TestStartStopStart(t *testing.T) {
	srv := pgtest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := srv.Database(t)
	query := func() (int, error) {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS kept (n int); INSERT INTO kept VALUES (1)"); err != nil {
			return 0, err
		}
		var n int
		err = conn.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n)
		return n, err
	}
	if n, err := query(); err != nil || n != 1 {
		t.Fatalf("first query: %d rows, %v", n, err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := query(); err == nil {
		t.Fatal("query succeeded against a stopped server")
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := query(); err != nil || n != 2 {
		t.Fatalf("query after restart: %d rows, %v; want 2 (the first row kept)", n, err)
	}
}

// TestMissingBinaries: without the binaries Start says so with
// ErrNoPostgres (which Main and StartT turn into a failure under CI and a
// loud skip elsewhere), and leaves nothing behind.
func TestMissingBinaries(t *testing.T) {
	t.Setenv("PGTEST_BIN", t.TempDir())
	s, err := pgtest.Start(context.Background())
	if !errors.Is(err, pgtest.ErrNoPostgres) || s != nil {
		t.Fatalf("Start without binaries: %v, %v; want ErrNoPostgres", s, err)
	}
}
