package agent

import (
	"sort"
	"time"

	"meshplane/events"
)

// Follower turns what the engine says of the node's declared containers
// at each pass (ContainerState) into the transitions the controller
// records (events.ContainerChange): only a container whose state changed
// is said, so a container that runs as it should costs nothing per pass.
// It is pure (its clock is the pass's now) and not safe for concurrent
// use; the Agent holds one and calls it under its lock.
//
// A container's workload state, from the engine's:
//
//	restarting                               crash-looping
//	running, within MinHealthy of a restart  crash-looping (between two crashes)
//	exited, dead, OOM-killed                 oom-killed
//	exited, dead                             exited
//	created                                  starting
//	running, health unhealthy                unhealthy
//	running, health starting                 starting
//	running, health healthy                  running
//	running, no check, run MinHealthy        running (else starting)
//	gone, still declared, seen before        vanished
//
// A crash loop is one episode: it is said when it begins, and again only
// when its restart count has at least doubled since it was last said
// (2, 4, 8 ...); the state that ends it carries the episode's count and
// its first crash (Restarts, Since). The changes that say a container died
// (crash-looping, exited, oom-killed) want its last output (NeedLog).
type Follower struct {
	// MinHealthy is how long a container with no health check runs before
	// it counts as running; 0 is events.MinHealthy.
	MinHealthy time.Duration

	seen map[string]*followed
}

type followed struct {
	state    string    // the last state said
	restarts int       // the engine's count at the last pass
	since    time.Time // the crash loop's first crash; zero outside one
	base     int       // the engine's count before the episode
	said     int       // the episode's count when last said
	exit     int       // the last exit code seen (the engine clears it at a start)
}

// Transition is one change a pass saw, and whether the container's last
// output should go with it.
type Transition struct {
	events.ContainerChange
	NeedLog bool
}

// Step is one pass: declared maps each declared container to its module;
// states holds what the engine says of those it has (a declared container
// missing from it is gone). It returns the transitions, sorted by
// container, with Node and Declaration left for the caller.
func (f *Follower) Step(now time.Time, declared map[string]string, states map[string]ContainerState) []Transition {
	if f.seen == nil {
		f.seen = map[string]*followed{}
	}
	minHealthy := f.MinHealthy
	if minHealthy <= 0 {
		minHealthy = events.MinHealthy
	}
	names := make([]string, 0, len(declared))
	for n := range declared {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Transition
	for _, name := range names {
		st, ok := states[name]
		fl := f.seen[name]
		if !ok {
			if fl != nil && fl.state != events.WorkloadVanished {
				out = append(out, Transition{ContainerChange: events.ContainerChange{
					Module: declared[name], Container: name, State: events.WorkloadVanished, At: now.UTC(),
				}})
				fl.state, fl.since, fl.restarts = events.WorkloadVanished, time.Time{}, 0
			}
			continue
		}
		first := fl == nil
		if first {
			fl = &followed{restarts: st.Restarts}
			f.seen[name] = fl
		}
		c := events.ContainerChange{
			Module: declared[name], Container: name, At: now.UTC(),
			Health: st.Health, Output: st.HealthLog,
		}
		restarted := st.Restarts > fl.restarts
		recent := !st.StartedAt.IsZero() && now.Sub(st.StartedAt) < minHealthy
		state := workloadState(st, now, minHealthy)
		if st.Status == StatusRestarting || (st.Status == StatusRunning && recent && (restarted || fl.state == events.WorkloadCrashLooping)) {
			state = events.WorkloadCrashLooping
		}
		switch state {
		case events.WorkloadCrashLooping:
			if fl.state != events.WorkloadCrashLooping {
				fl.since, fl.base, fl.said = st.FinishedAt, fl.restarts, 0
				if first {
					fl.base = 0 // seen first in a loop: the engine's whole count
				}
				if fl.since.IsZero() {
					fl.since = now.UTC()
				}
			}
			c.Restarts, c.Since = max(st.Restarts-fl.base, 1), fl.since.UTC()
			c.ExitCode = st.ExitCode
			if st.Status == StatusRunning {
				c.ExitCode = fl.exit // between two crashes: the last one's
			}
			if !st.FinishedAt.IsZero() {
				c.At = st.FinishedAt.UTC()
			}
			if c.Since.After(c.At) {
				c.Since = c.At
			}
		case events.WorkloadExited, events.WorkloadOOMKilled:
			c.ExitCode = st.ExitCode
			if !st.FinishedAt.IsZero() {
				c.At = st.FinishedAt.UTC()
			}
		case events.WorkloadStarting:
			if !st.StartedAt.IsZero() {
				c.At = st.StartedAt.UTC()
			}
		case events.WorkloadRunning:
			if st.Health == "" && !st.StartedAt.IsZero() {
				c.At = st.StartedAt.Add(minHealthy).UTC()
			}
		}
		if c.At.After(now) {
			c.At = now.UTC()
		}
		fl.restarts = st.Restarts
		if st.Status != StatusRunning && st.Status != StatusCreated {
			fl.exit = st.ExitCode
		}
		switch {
		case state == events.WorkloadCrashLooping && fl.state == events.WorkloadCrashLooping:
			if c.Restarts < 2*max(fl.said, 1) {
				continue // the same episode, not yet doubled
			}
		case state == fl.state:
			continue
		}
		if fl.state == events.WorkloadCrashLooping && state != events.WorkloadCrashLooping {
			// The state that ends an episode carries its count.
			c.Restarts, c.Since = max(fl.restarts-fl.base, fl.said), fl.since.UTC()
			if c.Since.After(c.At) {
				c.Since = c.At
			}
			fl.since = time.Time{}
		}
		if state == events.WorkloadCrashLooping {
			fl.said = c.Restarts
		}
		fl.state = state
		c.State = state
		if c.State != events.WorkloadUnhealthy {
			c.Output = "" // the probe's output goes with unhealthy only
		}
		out = append(out, Transition{ContainerChange: c, NeedLog: state == events.WorkloadCrashLooping || state == events.WorkloadExited || state == events.WorkloadOOMKilled})
	}
	for name := range f.seen {
		if _, ok := declared[name]; !ok {
			delete(f.seen, name) // no longer declared: the agent removed it
		}
	}
	return out
}

// workloadState is st's workload state, but for a crash loop (which needs
// the pass before).
func workloadState(st ContainerState, now time.Time, minHealthy time.Duration) string {
	switch st.Status {
	case StatusRestarting:
		return events.WorkloadCrashLooping
	case StatusCreated:
		return events.WorkloadStarting
	case StatusRunning:
	default: // exited, dead
		if st.OOMKilled {
			return events.WorkloadOOMKilled
		}
		return events.WorkloadExited
	}
	switch st.Health {
	case HealthUnhealthy:
		return events.WorkloadUnhealthy
	case HealthStarting:
		return events.WorkloadStarting
	case HealthHealthy:
		return events.WorkloadRunning
	}
	if st.StartedAt.IsZero() || now.Sub(st.StartedAt) >= minHealthy {
		return events.WorkloadRunning
	}
	return events.WorkloadStarting
}
