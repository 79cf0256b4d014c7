package pgstore

import (
	"fmt"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
	"meshplane/events/storetest"
)

// BenchmarkChainCost: storetest's appends with the chain (as stored: every
// group by commitOnce, the head's value read with the head) and without
// (unchained: as before it, small groups pipelined in one round trip), in
// one run, for BENCHMARKS.md.
func BenchmarkChainCost(b *testing.B) {
	for _, chained := range []bool{false, true} {
		f := storetest.Factory{Open: func(tb testing.TB) events.Store {
			pgtest.Need(tb, srv)
			return openURL(tb, srv.Database(tb), WithPollInterval(200*time.Millisecond), func(c *config) { c.unchained = !chained })
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
