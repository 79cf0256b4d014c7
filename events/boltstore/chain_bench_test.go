package boltstore

import (
	"fmt"
	"path/filepath"
	"testing"

	"meshplane/events"
	"meshplane/events/storetest"
)

// BenchmarkChainCost: storetest's appends with the chain (as stored) and
// without (chainStart 0: as before it), in one run, for BENCHMARKS.md.
func BenchmarkChainCost(b *testing.B) {
	for _, chained := range []bool{false, true} {
		f := storetest.Factory{Open: func(t testing.TB) events.Store {
			s, err := Open(filepath.Join(t.TempDir(), "events.db"))
			if err != nil {
				t.Fatal(err)
			}
			if !chained {
				s.chainStart = 0 // before any append: the writer reads it after Submit
			}
			return s
		}}
		for _, batch := range []int{1, 100} {
			for _, writers := range []int{1, 8} {
				b.Run(fmt.Sprintf("chain=%v/batch=%d/writers=%d", chained, batch, writers), func(b *testing.B) {
					storetest.BenchAppend(b, f, batch, writers)
				})
			}
		}
	}
}
