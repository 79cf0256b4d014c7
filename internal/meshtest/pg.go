package meshtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"meshplane/events/pgstore/pgtest"
)

// The PostgreSQL cluster of this package's tests, started by the first test
// that needs one and stopped by TestMain.
var (
	PgOnce sync.Once
	PgSrv  *pgtest.Server
	PgErr  error
)

// PgDatabase is a fresh database on the package's cluster. Without
// PostgreSQL the test fails under CI and skips loudly elsewhere.
func PgDatabase(t *testing.T) string {
	t.Helper()
	PgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		PgSrv, PgErr = pgtest.Start(ctx)
	})
	if PgErr != nil {
		if pgtest.InCI() {
			t.Fatalf("pgtest: cannot start PostgreSQL under CI: %v", PgErr)
		}
		t.Skipf("pgtest: SKIPPED: %v", PgErr)
	}
	return PgSrv.Database(t)
}

func ClosePG() error {
	if PgSrv == nil {
		return nil
	}
	return PgSrv.Close()
}
