package events

import "time"

// UpdatePolicy is a module's update block: how a roll-out (a deploy, a
// roll-out policy's build, a redefinition) replaces its containers, and
// what it waits for. A module without one (Update nil: every module
// defined before the block existed) rolls out as it always did,
// stop-first. The module file fills the defaults, so a stored policy is
// whole:
//
//	{"order": "stop-first", "min_healthy_ms": 10000, "healthy_deadline_ms": 300000, "on_failure": "pause"}
type UpdatePolicy struct {
	Order             string `json:"order"`               // UpdateStopFirst or UpdateStartFirst
	MinHealthyMS      int64  `json:"min_healthy_ms"`      // how long a container without a health check runs before it is healthy
	HealthyDeadlineMS int64  `json:"healthy_deadline_ms"` // how long a roll-out may take to be healthy before it failed
	OnFailure         string `json:"on_failure"`          // UpdatePause or UpdateRevert
}

// Update orders and failure actions (UpdatePolicy).
const (
	UpdateStopFirst  = "stop-first"  // the old container stops, then the new one starts (the default)
	UpdateStartFirst = "start-first" // the new one starts and is healthy, then the old one stops
	UpdatePause      = "pause"       // a failed roll-out is marked failed, nothing reverted (the default)
	UpdateRevert     = "revert"      // a failed roll-out reverts the module to before it
)

// Defaults of an update block (the module file's).
const (
	DefaultMinHealthy      = 10 * time.Second
	DefaultHealthyDeadline = 5 * time.Minute
)

// DefaultUpdatePolicy is an update block with nothing set.
func DefaultUpdatePolicy() UpdatePolicy {
	return UpdatePolicy{
		Order: UpdateStopFirst, OnFailure: UpdatePause,
		MinHealthyMS: DefaultMinHealthy.Milliseconds(), HealthyDeadlineMS: DefaultHealthyDeadline.Milliseconds(),
	}
}
