package web

import "testing"

// TestStateKind: the overview styles a state by kind, the engine's states
// (issue 33's list) among them; a state it does not know is neutral.
func TestStateKind(t *testing.T) {
	for _, c := range []struct{ state, kind string }{
		{"crash-looping", "fail"}, {"restarting", "fail"}, {"unhealthy", "fail"}, {"exited", "fail"},
		{"failed", "fail"}, {"failing", "fail"}, {"unreachable", "fail"},
		{"starting", "neutral"}, {"unknown", "neutral"}, {"created", "neutral"}, {"", "neutral"},
		{"a-state-of-tomorrow", "neutral"},
		{"running", "ok"}, {"converged", "ok"}, {"in-place", "ok"},
		{"held", "warn"}, {"waiting-on-take", "warn"}, {"pending", "warn"}, {"restarted", "warn"},
		{"churning", "churn"},
	} {
		if got := stateKind(c.state); got != c.kind {
			t.Errorf("stateKind(%q) = %q, want %q", c.state, got, c.kind)
		}
	}
}
