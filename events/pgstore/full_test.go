package pgstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"meshplane/events"
)

// TestFullIsStoreFull: PostgreSQL's disk_full (SQLSTATE 53100) is
// events.ErrStoreFull, the server's error kept; other errors are not.
func TestFullIsStoreFull(t *testing.T) {
	for _, tc := range []struct {
		err  error
		full bool
	}{
		{fmt.Errorf("commit: %w", &pgconn.PgError{Code: "53100", Message: "could not extend file"}), true},
		{&pgconn.PgError{Code: "23505", ConstraintName: "events_id_key"}, false},
		{errors.New("conn closed"), false},
	} {
		got := full(tc.err)
		if errors.Is(got, events.ErrStoreFull) != tc.full || !errors.Is(got, tc.err) {
			t.Errorf("full(%v) = %v: want ErrStoreFull %v, the cause kept", tc.err, got, tc.full)
		}
	}
}
