package boltstore

import (
	"path/filepath"
	"testing"

	"meshplane/events"
	"meshplane/events/storetest"
)

// factory opens stores on temporary files for the conformance suite.
var factory = storetest.Factory{
	Open: func(t testing.TB) events.Store {
		s, err := Open(filepath.Join(t.TempDir(), "events.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
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
