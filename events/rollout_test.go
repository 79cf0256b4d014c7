package events_test

import (
	"errors"
	"strings"
	"testing"

	"meshplane/events"
)

// TestRolloutFailureCheck: the door takes a failed roll-out's container
// and why only as bounded text; a terminal escape, invalid UTF-8, an empty
// or oversized name are refused.
func TestRolloutFailureCheck(t *testing.T) {
	good := events.RolloutFailure{Module: "forge", Container: "web", Why: "exited with code 1:\ncat: /no/such/file"}
	tests := []struct {
		name string
		edit func(*events.RolloutFailure)
		ok   bool
	}{
		{"good", func(*events.RolloutFailure) {}, true},
		{"no container", func(f *events.RolloutFailure) { f.Container = "" }, false},
		{"no module", func(f *events.RolloutFailure) { f.Module = "" }, false},
		{"a container with a newline", func(f *events.RolloutFailure) { f.Container = "web\nfake" }, false},
		{"a terminal escape in why", func(f *events.RolloutFailure) { f.Why = "\x1b]0;owned\x07" }, false},
		{"invalid UTF-8", func(f *events.RolloutFailure) { f.Why = "\xff" }, false},
		{"why over the bound", func(f *events.RolloutFailure) { f.Why = strings.Repeat("x", events.MaxReportMessage+1) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good
			tt.edit(&f)
			err := f.Check()
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, events.ErrInvalid)) {
				t.Fatalf("Check = %v, want ok %v (or ErrInvalid)", err, tt.ok)
			}
		})
	}
}
