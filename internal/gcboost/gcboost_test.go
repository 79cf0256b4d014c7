package gcboost

import (
	"os"
	"runtime/debug"
	"testing"
)

// current reads the collector's target without changing it.
func current() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// unsetGOGC runs the test without GOGC in the environment, as Boost only
// acts then, and puts back the target the test started with.
func unsetGOGC(t *testing.T) {
	t.Setenv("GOGC", "") // restores the variable after the test
	os.Unsetenv("GOGC")
	start := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(start) })
}

func TestBoostNestsAndRestores(t *testing.T) {
	unsetGOGC(t)
	first := Boost()
	if got := current(); got != Percent {
		t.Fatalf("boosted: GOGC=%d, want %d", got, Percent)
	}
	second := Boost()
	first()
	first() // a second call changes nothing
	if got := current(); got != Percent {
		t.Fatalf("one of two boosts released: GOGC=%d, want %d still", got, Percent)
	}
	second()
	if got := current(); got != 100 {
		t.Fatalf("both released: GOGC=%d, want 100 back", got)
	}
}

func TestBoostLeavesTheOperatorsChoice(t *testing.T) {
	t.Setenv("GOGC", "50")
	start := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(start) })
	release := Boost()
	if got := current(); got != 50 {
		t.Errorf("GOGC=50 in the environment: boosted to %d", got)
	}
	release()

	unsetGOGC(t)
	for _, set := range []int{-1, 2 * Percent} { // collection off, or a target above the boost's
		debug.SetGCPercent(set)
		release := Boost()
		if got := current(); got != set {
			t.Errorf("target %d: boosted to %d", set, got)
		}
		release()
		if got := current(); got != set {
			t.Errorf("target %d: %d after the release", set, got)
		}
	}
}
