// Package pgtest is the test side of pgscratch's throwaway PostgreSQL
// clusters, for tests and benchmarks only (the shipped binary links
// pgscratch, never this package).
//
// A package's tests share one cluster through TestMain:
//
//	var srv *pgtest.Server
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &srv)) }
//
// and each test takes a fresh database of it with srv.Database(t). When the
// binaries are missing, Main fails the run under CI (env CI=true) and
// otherwise leaves srv nil, so that Need skips each test with a loud reason.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"meshplane/events/pgstore/pgscratch"
)

// Server is a throwaway cluster (pgscratch.Server).
type Server = pgscratch.Server

// Options choose where a cluster of StartWith listens and how its
// binaries run (pgscratch.Options).
type Options = pgscratch.Options

// ErrNoPostgres means the PostgreSQL server binaries were not found.
var ErrNoPostgres = pgscratch.ErrNoPostgres

// Start makes a new cluster in a temporary directory and starts it. Close
// stops it and removes the directory.
func Start(ctx context.Context) (*Server, error) { return pgscratch.Start(ctx) }

// StartWith is Start with Options.
func StartWith(ctx context.Context, o Options) (*Server, error) { return pgscratch.StartWith(ctx, o) }

// Bin returns the directory holding the PostgreSQL binaries (pgscratch.Bin).
func Bin() (string, error) { return pgscratch.Bin() }

// InCI reports whether the tests run under CI (env CI=true), where a
// missing PostgreSQL is a failure, never a skip.
func InCI() bool { v, _ := strconv.ParseBool(os.Getenv("CI")); return v }

// Main starts the shared cluster of a package's tests into *srv, runs m,
// stops the cluster and returns the exit code. Without PostgreSQL it fails
// the run under CI; elsewhere it says so loudly and runs the tests with
// *srv nil (Need skips them).
func Main(m *testing.M, srv **Server) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := Start(ctx)
	cancel()
	if err != nil {
		if InCI() {
			fmt.Fprintf(os.Stderr, "FAIL: pgtest: cannot start PostgreSQL under CI: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "\n*** pgtest: SKIPPING every PostgreSQL test: %v ***\n\n", err)
		return m.Run()
	}
	*srv = s
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: close: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Need skips tb, loudly, when srv is nil (no PostgreSQL outside CI), and
// fails it under CI.
func Need(tb testing.TB, srv *Server) {
	tb.Helper()
	if srv != nil {
		return
	}
	if InCI() {
		tb.Fatal("pgtest: no PostgreSQL server under CI")
	}
	tb.Skip("pgtest: SKIPPED: no PostgreSQL binaries on this machine (install postgresql, or set PGTEST_BIN)")
}

// StartT starts a cluster of the test's own (for tests that stop and start
// it), closed when the test ends. Without PostgreSQL it fails under CI and
// skips loudly elsewhere.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if errors.Is(err, ErrNoPostgres) && !InCI() {
		tb.Skipf("pgtest: SKIPPED: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	return s
}
