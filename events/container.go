package events

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Container state events: what the engine says of a declared container,
// as its node's agent saw it change (on stream "node-<name>", recorded
// through the report door beside the apply.reported of the pass that saw
// it). Only transitions are events, as liveness is: a container that runs
// as it should costs nothing per pass, and a crash loop is one episode
// (container.crash-looping again only when its restart count has at least
// doubled since the last one, then container.recovered or another state
// closing it), never one event per restart.
const (
	// A container started and is not yet proven: its health check has not
	// passed, or (without one) it has not run MinHealthy.
	TypeContainerStarting = "container.starting"
	// A container runs as it should: healthy, or run MinHealthy without
	// exiting. After a failing state it closes that episode (Restarts).
	TypeContainerRecovered = "container.recovered"
	// A container's health check failed (Output: the last probe's).
	TypeContainerUnhealthy = "container.unhealthy"
	// A container exits and the engine restarts it, again and again.
	TypeContainerCrashLooping = "container.crash-looping"
	// A container exited and stays down (Log: its last output).
	TypeContainerExited = "container.exited"
	// The kernel killed a container for lack of memory.
	TypeContainerOOMKilled = "container.oom-killed"
	// A declared container is gone from the engine, not by the agent.
	TypeContainerVanished = "container.vanished"
)

// MinHealthy is how long a container with no health check runs without
// exiting before it counts as running (container.recovered), 10 s.
const MinHealthy = 10 * time.Second

// Workload states, the workload axis of a container (ContainerChange.State
// names the event's type in one word).
const (
	WorkloadStarting     = "starting"
	WorkloadRunning      = "running"
	WorkloadUnhealthy    = "unhealthy"
	WorkloadCrashLooping = "crash-looping"
	WorkloadExited       = "exited"
	WorkloadOOMKilled    = "oom-killed"
	WorkloadVanished     = "vanished"
)

// WorkloadTypes maps each workload state to its event type.
var WorkloadTypes = map[string]string{
	WorkloadStarting:     TypeContainerStarting,
	WorkloadRunning:      TypeContainerRecovered,
	WorkloadUnhealthy:    TypeContainerUnhealthy,
	WorkloadCrashLooping: TypeContainerCrashLooping,
	WorkloadExited:       TypeContainerExited,
	WorkloadOOMKilled:    TypeContainerOOMKilled,
	WorkloadVanished:     TypeContainerVanished,
}

// Bounds of a container state event, in bytes.
const (
	// MaxContainerLog bounds Log: the last 4 KiB of the container's output.
	MaxContainerLog = 4 << 10
	// MaxContainerOutput bounds Output: the last probe's output.
	MaxContainerOutput = 1 << 10
	// MaxContainerRestarts bounds Restarts: a million restarts (years of a
	// crash loop at the engine's one-minute back-off).
	MaxContainerRestarts = 1_000_000
)

// ContainerChange is the payload every container state event has (each
// type its own Go type over it, below):
//
//	{"node": "novox", "module": "forge", "container": "web",
//	 "declaration": "novox/12", "state": "crash-looping",
//	 "at": "2026-12-07T19:00:02Z", "exit_code": 1, "restarts": 14,
//	 "since": "2026-12-07T18:59:30Z",
//	 "log": "cat: /no/such/file: No such file or directory\n"}
//
// State is the container's state in one word (the type's: starting,
// running, unhealthy, crash-looping, exited, oom-killed, vanished). At is
// when it happened by the engine's clock (the last crash, the exit, the
// probe), else when the agent saw it. ExitCode is the last exit's
// (crash-looping, exited, oom-killed). Restarts is the engine's restart
// count since Since, the episode's first crash (crash-looping; on
// container.recovered, the count of the episode it closes, with Since).
// Health is the engine's verdict ("", starting, healthy, unhealthy) and
// Output the last probe's output, control characters escaped, at most
// MaxContainerOutput. Log is the container's last output when it died,
// escaped, at most MaxContainerLog. Declaration is the declaration the
// agent applied when it saw it. Fields may be added, never removed or
// renamed.
type ContainerChange struct {
	Node        string    `json:"node"`
	Module      string    `json:"module"`
	Container   string    `json:"container"`
	Declaration string    `json:"declaration,omitempty"`
	State       string    `json:"state"`
	At          time.Time `json:"at"`
	ExitCode    int       `json:"exit_code,omitempty"`
	Restarts    int       `json:"restarts,omitempty"`
	Since       time.Time `json:"since,omitzero"`
	Health      string    `json:"health,omitempty"`
	Output      string    `json:"output,omitempty"`
	Log         string    `json:"log,omitempty"`
}

// The container state events' Go types: one a type, all of one shape.
type (
	ContainerStarting     struct{ ContainerChange }
	ContainerRecovered    struct{ ContainerChange }
	ContainerUnhealthy    struct{ ContainerChange }
	ContainerCrashLooping struct{ ContainerChange }
	ContainerExited       struct{ ContainerChange }
	ContainerOOMKilled    struct{ ContainerChange }
	ContainerVanished     struct{ ContainerChange }
)

func (ContainerStarting) EventType() string     { return TypeContainerStarting }
func (ContainerRecovered) EventType() string    { return TypeContainerRecovered }
func (ContainerUnhealthy) EventType() string    { return TypeContainerUnhealthy }
func (ContainerCrashLooping) EventType() string { return TypeContainerCrashLooping }
func (ContainerExited) EventType() string       { return TypeContainerExited }
func (ContainerOOMKilled) EventType() string    { return TypeContainerOOMKilled }
func (ContainerVanished) EventType() string     { return TypeContainerVanished }

// ContainerPayload is the event payload of c, of the type its State names
// (nil for a state that is none of WorkloadTypes').
func ContainerPayload(c ContainerChange) Payload {
	switch c.State {
	case WorkloadStarting:
		return ContainerStarting{c}
	case WorkloadRunning:
		return ContainerRecovered{c}
	case WorkloadUnhealthy:
		return ContainerUnhealthy{c}
	case WorkloadCrashLooping:
		return ContainerCrashLooping{c}
	case WorkloadExited:
		return ContainerExited{c}
	case WorkloadOOMKilled:
		return ContainerOOMKilled{c}
	case WorkloadVanished:
		return ContainerVanished{c}
	}
	return nil
}

// ContainerOf is the ContainerChange a container state event's payload
// carries, and whether p is one.
func ContainerOf(p Payload) (ContainerChange, bool) {
	switch v := p.(type) {
	case ContainerStarting:
		return v.ContainerChange, true
	case ContainerRecovered:
		return v.ContainerChange, true
	case ContainerUnhealthy:
		return v.ContainerChange, true
	case ContainerCrashLooping:
		return v.ContainerChange, true
	case ContainerExited:
		return v.ContainerChange, true
	case ContainerOOMKilled:
		return v.ContainerChange, true
	case ContainerVanished:
		return v.ContainerChange, true
	}
	return ContainerChange{}, false
}

// ErrBadContainerChange means a container state change is not one the door
// takes; it comes wrapped beside ErrInvalid.
var ErrBadContainerChange = errors.New("bad container state change")

// Check says whether c has a form the door takes: a known state, names
// within MaxReportName, a time, counts from 0 to MaxContainerRestarts, an
// exit code from 0 to 255, a health from the engine's words, Output and
// Log within their bounds and valid UTF-8 with no control character but
// newline and tab (the agent escapes them). Whose container it is, the
// door checks against the node's declaration.
func (c ContainerChange) Check() error {
	if _, ok := WorkloadTypes[c.State]; !ok {
		return bad("state", "%q is none of starting, running, unhealthy, crash-looping, exited, oom-killed, vanished", c.State)
	}
	for _, f := range []struct{ name, v string }{{"node", c.Node}, {"module", c.Module}, {"container", c.Container}, {"declaration", c.Declaration}} {
		if len(f.v) > MaxReportName {
			return bad(f.name, "%d bytes, over the limit of %d", len(f.v), MaxReportName)
		}
		if !utf8.ValidString(f.v) || hasControl(f.v, false) {
			return bad(f.name, "not text (invalid UTF-8 or a control character)")
		}
	}
	if c.Container == "" || c.Node == "" {
		return bad("container", "empty node or container")
	}
	if c.At.IsZero() {
		return bad("at", "no time")
	}
	if c.Restarts < 0 || c.Restarts > MaxContainerRestarts {
		return bad("restarts", "%d, not from 0 to %d", c.Restarts, MaxContainerRestarts)
	}
	if c.ExitCode < 0 || c.ExitCode > 255 {
		return bad("exit_code", "%d, not from 0 to 255", c.ExitCode)
	}
	if !c.Since.IsZero() && c.Since.After(c.At) {
		return bad("since", "%s, after at %s", c.Since.Format(time.RFC3339), c.At.Format(time.RFC3339))
	}
	switch c.Health {
	case "", "starting", "healthy", "unhealthy":
	default:
		return bad("health", "%q is none of starting, healthy, unhealthy", c.Health)
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"output", c.Output, MaxContainerOutput}, {"log", c.Log, MaxContainerLog}} {
		if len(f.v) > f.max {
			return bad(f.name, "%d bytes, over the limit of %d", len(f.v), f.max)
		}
		if !utf8.ValidString(f.v) || hasControl(f.v, true) {
			return bad(f.name, "unescaped (invalid UTF-8 or a control character)")
		}
	}
	return nil
}

func bad(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrBadContainerChange, invalid(field, format, args...))
}

// hasControl reports a C0 or C1 control character, DEL or a bidi override
// in s; lines says newline and tab are let by.
func hasControl(s string, lines bool) bool {
	for _, r := range s {
		switch {
		case lines && (r == '\n' || r == '\t'):
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return true
		}
	}
	return false
}
