package projections

import (
	"maps"
	"slices"
	"strings"
	"time"

	"meshplane/events"
)

// The workload axis of status (docs/design.md, "Status has two axes"): what
// the engine runs, as the node's agent said it changed (the container.*
// events). A node whose agent never said any (an older build, or history
// from before them) is WorkloadUnknown on it, and its health reads as it
// did; otherwise a declared container of its applied declaration that is
// not running, or restarts, or is unhealthy, keeps the node from
// converged, and says which.

// Health values of the workload axis, between failing and unknown in the
// order they win: crash-looping over stopped over unhealthy; starting wins
// only over converged.
const (
	HealthCrashLooping = "crash-looping" // a declared container exits and the engine restarts it, again and again
	HealthStopped      = "stopped"       // a declared container exited, was OOM-killed, or is gone from the engine
	HealthUnhealthy    = "unhealthy"     // a declared container fails its health check
	HealthStarting     = "starting"      // a declared container started, and is not proven yet
)

// WorkloadUnknown is NodeStatus.Workload of a node whose agent says
// nothing of its containers' states.
const WorkloadUnknown = "unknown"

// ContainerStatus is what status keeps of one container of a node: its
// last container state event.
type ContainerStatus struct {
	Module   string    `json:"module"`
	State    string    `json:"state"` // starting, running, unhealthy, crash-looping, exited, oom-killed, vanished
	At       time.Time `json:"at"`
	ExitCode int       `json:"exit_code,omitempty"`
	Restarts int       `json:"restarts,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Health   string    `json:"health,omitempty"`
	Output   string    `json:"output,omitempty"`
	// LogLine is the last line of the log the event carried.
	LogLine  string `json:"log_line,omitempty"`
	Position uint64 `json:"position"` // Reason says why in one line: "exit code 1 at 19:00:02, the 14th
	// restart since 18:59:30: <its last log line>".
	Reason string `json:"reason,omitempty"`
}

// containerStatusOf is c as status keeps it, from the event at position.
func containerStatusOf(c events.ContainerChange, position uint64) ContainerStatus {
	return ContainerStatus{
		Module: c.Module, State: c.State, At: c.At, ExitCode: c.ExitCode, Restarts: c.Restarts, Since: c.Since,
		Health: c.Health, Output: c.Output, LogLine: LastLine(c.Log), Position: position,
	}
}

// LastLine is the last line of log that is not blank.
func LastLine(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// workloadRank orders container states, worst first, as node health.
func workloadHealth(state string) (health string, rank int) {
	switch state {
	case events.WorkloadCrashLooping:
		return HealthCrashLooping, 4
	case events.WorkloadExited, events.WorkloadOOMKilled, events.WorkloadVanished:
		return HealthStopped, 3
	case events.WorkloadUnhealthy:
		return HealthUnhealthy, 2
	case events.WorkloadStarting:
		return HealthStarting, 1
	}
	return HealthConverged, 0
}

// workload fills st's containers and workload axis from n, for the
// containers of its applied declaration (d: their module by name), and
// returns the node's worst workload health ("" for none known or all
// running).
func (n *statusNode) workload(st *NodeStatus, declared map[string]string) string {
	if !n.followed {
		st.Workload = WorkloadUnknown
		return ""
	}
	worst, rank := "", 0
	st.Workload = events.WorkloadRunning
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		c, ok := n.containers[name]
		if !ok {
			continue
		}
		if st.Containers == nil {
			st.Containers = map[string]ContainerStatus{}
		}
		c.Reason = ContainerReason(c)
		st.Containers[name] = c
		h, r := workloadHealth(c.State)
		if r > 0 {
			ms := st.Modules[c.Module]
			if _, mr := workloadHealth(moduleWorkload(ms.State)); r > mr && ms.State != HealthFailing {
				ms.State = h
				st.Modules[c.Module] = ms
			}
		}
		if r > rank {
			worst, rank, st.Workload = h, r, c.State
		}
	}
	return worst
}

// moduleWorkload maps a module's state back to a container state for
// ranking ("" for none of the workload's).
func moduleWorkload(state string) string {
	switch state {
	case HealthCrashLooping:
		return events.WorkloadCrashLooping
	case HealthStopped:
		return events.WorkloadExited
	case HealthUnhealthy:
		return events.WorkloadUnhealthy
	case HealthStarting:
		return events.WorkloadStarting
	}
	return ""
}
