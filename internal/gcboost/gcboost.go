// Package gcboost lets a bulk job, a projection rebuild above all, run with
// a garbage collector that collects less often than the process's default.
//
// A rebuild folds a store into a heap that only grows, and allocates on its
// way some three bytes of garbage for each byte it keeps. At the default
// target (GOGC=100) the collector runs each time the heap has doubled since
// the last collection, and each run marks everything folded so far: a
// million events cost 16 collections, a quarter of the rebuild's CPU
// (BENCHMARKS.md). At Percent the same rebuild runs six, for about a tenth
// more memory at its peak, since most of what it allocates dies young.
//
// The process's own choice wins: with GOGC set in its environment, or a
// target already above Percent, or collection off, Boost changes nothing.
// A memory limit (GOMEMLIMIT, debug.SetMemoryLimit) still holds under a
// boost: the collector runs as often as the limit needs.
package gcboost

import (
	"os"
	"runtime/debug"
	"sync"
)

// Percent is the collector's target while a job is boosted.
const Percent = 300

var (
	mu     sync.Mutex
	active int  // boosts not yet released
	saved  int  // the target before the first of them
	raised bool // whether the first of them raised it
)

// Boost raises the collector's target to Percent until release is called.
// Boosts nest and overlap: the target goes back to what it was when the
// last one is released. release may be called more than once.
func Boost() (release func()) {
	mu.Lock()
	defer mu.Unlock()
	if active == 0 {
		raised = false
		if os.Getenv("GOGC") == "" {
			saved = debug.SetGCPercent(Percent)
			raised = true
			if saved < 0 || saved >= Percent {
				debug.SetGCPercent(saved)
				raised = false
			}
		}
	}
	active++
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			active--
			if active == 0 && raised {
				debug.SetGCPercent(saved)
				raised = false
			}
		})
	}
}
