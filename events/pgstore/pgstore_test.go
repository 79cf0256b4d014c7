package pgstore

import (
	"context"
	"os"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
	"meshplane/events/storetest"
)

// srv is the package's shared throwaway cluster (nil when PostgreSQL is
// missing outside CI: every test then skips, loudly).
var srv *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &srv)) }

// openURL opens a store on url, closed when tb ends.
func openURL(tb testing.TB, url string, opts ...Option) *Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, url, opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// factory opens each store on a fresh database of the shared cluster.
var factory = storetest.Factory{
	Open: func(tb testing.TB) events.Store {
		pgtest.Need(tb, srv)
		return openURL(tb, srv.Database(tb), WithPollInterval(200*time.Millisecond))
	},
	Reopen: func(tb testing.TB, st events.Store) events.Store {
		url := st.(*Store).url
		if err := st.Close(); err != nil {
			tb.Fatalf("Close: %v", err)
		}
		return openURL(tb, url)
	},
}

func TestConformance(t *testing.T) { storetest.Run(t, factory) }

func BenchmarkStore(b *testing.B) { storetest.Bench(b, factory) }
