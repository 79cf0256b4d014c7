// Package testwait is the one wait of the tests for something that
// happens in its own time (a message through the bus, a metric scraped, a
// process started): Eventually polls a condition until it holds or a
// limit passes. For tests only.
package testwait

import (
	"testing"
	"time"
)

// Every is how often Eventually asks.
const Every = 20 * time.Millisecond

// Eventually calls cond every Every until it returns nil, and fails t
// with its last error once limit has passed.
func Eventually(t testing.TB, limit time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", limit, err)
		}
		time.Sleep(Every)
	}
}
