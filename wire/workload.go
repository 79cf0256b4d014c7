package wire

import (
	"fmt"

	"meshplane/events"
)

// Workload is what an agent's pass saw change in how its containers run
// (agent.Follower): the transitions since its last report, carried in the
// pass's apply report (its "workload" field, absent when nothing changed,
// so a quiet pass costs nothing more) and recorded by the report door as
// container state events (events.ContainerChange), each of its type.
//
//	"workload": {"changes": [{"node": "novox", "module": "forge",
//	  "container": "web", "state": "crash-looping",
//	  "at": "2026-12-07T19:00:02Z", "exit_code": 1, "restarts": 14,
//	  "since": "2026-12-07T18:59:30Z", "log": "..."}]}
//
// What the door takes: at most MaxWorkloadChanges changes, each one
// events.ContainerChange.Check takes, of the report's node, and of a
// container of the declaration the report names (the node's own, as the
// controller composed it); anything else refuses the whole report
// (recorded as report.refused, as a report is).
type Workload struct {
	Changes []events.ContainerChange `json:"changes"`
	// Rollouts are the start-first roll-outs the pass tried that failed
	// (their new containers removed, the old ones running): recorded as
	// rollout.failed, one a module. Absent when none.
	Rollouts []events.RolloutFailure `json:"rollouts,omitempty"`
}

// MaxWorkloadChanges bounds the changes one report carries: two per
// container of the largest declaration is far more than a pass sees.
const MaxWorkloadChanges = 1024

// Check checks w's form for a report of node: its count, and each change
// (events.ContainerChange.Check) of that node. Every failure wraps
// events.ErrInvalid and names the change.
func (w *Workload) Check(node string) error {
	if w == nil {
		return nil
	}
	if len(w.Changes) > MaxWorkloadChanges {
		return fmt.Errorf("workload: %d changes, over the limit of %d: %w", len(w.Changes), MaxWorkloadChanges, events.ErrInvalid)
	}
	if len(w.Rollouts) > MaxWorkloadChanges {
		return fmt.Errorf("workload: %d failed roll-outs, over the limit of %d: %w", len(w.Rollouts), MaxWorkloadChanges, events.ErrInvalid)
	}
	for i, f := range w.Rollouts {
		if err := f.Check(); err != nil {
			return fmt.Errorf("workload: rollouts[%d]: %w", i, err)
		}
	}
	for i, c := range w.Changes {
		if err := c.Check(); err != nil {
			return fmt.Errorf("workload: changes[%d] (%q): %w", i, c.Container, err)
		}
		if c.Node != node {
			return fmt.Errorf("workload: changes[%d] (%q): node %q, the report is %s's: %w", i, c.Container, c.Node, node, events.ErrInvalid)
		}
	}
	return nil
}

// List is w's changes; none for a nil w.
func (w *Workload) List() []events.ContainerChange {
	if w == nil {
		return nil
	}
	return w.Changes
}
