package events

import (
	"fmt"
	"unicode/utf8"
)

// TypeRolloutFailed: a module's start-first roll-out on a node did not
// become healthy (on stream "node-<name>", recorded by the report door
// beside the apply.reported of the pass that tried it, once: a later pass
// does not start the failed build again).
const TypeRolloutFailed = "rollout.failed"

// What the mesh does about a failed roll-out (RolloutFailed.Action): two
// different outcomes, and a third that ends a revert that failed too.
const (
	// RolloutRevert: the module's update block says on_failure: revert;
	// the controller reverts the module to RevertTo, the store position
	// before the roll-out (mesh revert's events, their causation
	// "rollout.failed:<this event's id>").
	RolloutRevert = "revert"
	// RolloutGaveUp: on_failure: pause; nothing is reverted, the old
	// containers run on, and the roll-out is marked failed.
	RolloutGaveUp = "gave-up"
	// RolloutStopped: the failed roll-out was itself the revert of a
	// failed one; it stops there (never a revert loop).
	RolloutStopped = "stopped"
)

// RolloutFailure is one container whose new build was not healthy, and
// why (its exit code and last log line, its probe's output, or the
// deadline), at most MaxReportMessage bytes.
type RolloutFailure struct {
	Module    string `json:"module"`
	Container string `json:"container"`
	Why       string `json:"why"`
}

// Check checks f's form (the report door): a module and a container
// within MaxReportName, Why within MaxReportMessage, each valid UTF-8
// with no control character (Why may have newlines and tabs: the agent
// escapes the rest).
func (f RolloutFailure) Check() error {
	for _, n := range []struct{ name, v string }{{"module", f.Module}, {"container", f.Container}} {
		if n.v == "" || len(n.v) > MaxReportName || !utf8.ValidString(n.v) || hasControl(n.v, false) {
			return fmt.Errorf("rollout failure: %s %q: empty, over %d bytes or not text: %w", n.name, n.v, MaxReportName, ErrInvalid)
		}
	}
	if len(f.Why) > MaxReportMessage || !utf8.ValidString(f.Why) || hasControl(f.Why, true) {
		return fmt.Errorf("rollout failure of %q: why is over %d bytes or not text (invalid UTF-8 or a control character): %w", f.Container, MaxReportMessage, ErrInvalid)
	}
	return nil
}

// RolloutFailed is a failed roll-out of one module on one node:
//
//	{"node": "novox", "module": "forge", "declaration": "novox/12",
//	 "containers": [{"module": "forge", "container": "web",
//	   "why": "exited with code 1, 2 restart(s): cat: /no/such/file"}],
//	 "action": "revert", "revert_to": 41}
//
// Action is RolloutRevert, RolloutGaveUp or RolloutStopped; RevertTo is
// the position a revert goes back to (0 unless Action is RolloutRevert).
// Fields may be added, never removed or renamed.
type RolloutFailed struct {
	Node        string           `json:"node"`
	Module      string           `json:"module"`
	Declaration string           `json:"declaration"`
	Containers  []RolloutFailure `json:"containers"`
	Action      string           `json:"action"`
	RevertTo    uint64           `json:"revert_to,omitempty"`
}

func (RolloutFailed) EventType() string { return TypeRolloutFailed }
