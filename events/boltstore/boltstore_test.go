package boltstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/storetest"
)

// factory opens stores on temporary files for the conformance suite.
var factory = storetest.Factory{
	Open: func(t testing.TB) events.Store {
		path := filepath.Join(t.TempDir(), "events.db")
		s, err := Open(path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if _, ok := t.(*testing.T); ok {
			// As bbolt's test helper checks its file after every test: the
			// store's invariants hold after everything the suite does. (The
			// suite has closed the store by then: its cleanup runs first.)
			t.Cleanup(func() { verifyClean(t, path) })
		}
		return s
	},
	Reopen: func(t testing.TB, st events.Store) events.Store {
		path := st.(*Store).Path()
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		s, err := Open(path)
		if err != nil {
			t.Fatalf("reopen %s: %v", path, err)
		}
		return s
	},
}

func TestConformance(t *testing.T) { storetest.Run(t, factory) }

func BenchmarkBoltstore(b *testing.B) { storetest.Bench(b, factory) }

// verifyClean fails t if Verify finds damage in the store file at path.
func verifyClean(t testing.TB, path string) {
	t.Helper()
	rep, err := Verify(context.Background(), path, WithLockTimeout(5*time.Second))
	if err != nil {
		t.Errorf("verify %s: %v", path, err)
		return
	}
	for _, d := range rep.Damage {
		t.Errorf("verify %s: %s", path, d)
	}
}
