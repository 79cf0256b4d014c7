package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"meshplane/declaration"
)

// Renamer is a Runtime that can give a managed container another name: the
// Docker runtime and simruntime are. With it and an Inspector, a container
// whose module rolls out start-first (declaration.Rollout) is replaced
// start-first; without them, stop-first.
type Renamer interface {
	// RenameContainer gives the managed container from the name to. A name
	// no managed container has is ErrNotFound; a container already named
	// to is ErrExists.
	RenameContainer(ctx context.Context, from, to string) error
}

// RolloutSuffix ends the temporary name of the new container of a
// start-first roll-out ("web.next") while it proves itself healthy.
const RolloutSuffix = ".next"

// rolloutPoll is how often a start-first roll-out asks the engine how its
// new container runs.
const rolloutPoll = 500 * time.Millisecond

// clock is the time an apply reads and waits on: the Agent's Now, and
// Config.Sleep (a timer when nil).
type clock struct {
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	failed map[string]FailedRollout // State.Failed
}

func (c clock) wait(ctx context.Context, d time.Duration) error {
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// startFirst reports whether step s is a replace its runtime carries out
// start-first.
func startFirst(rt Runtime, s Step) bool {
	c := s.Resource.Container
	if s.Action != Replace || c == nil || c.Rollout == nil || c.Rollout.Order != declaration.RolloutStartFirst {
		return false
	}
	_, in := rt.(Inspector)
	_, rn := rt.(Renamer)
	return in && rn
}

// replaceStartFirst replaces the running container c.Name start-first: the
// new one is created as c.Name+RolloutSuffix, waited for until healthy
// (awaitHealthy), then the old one is removed and the new one renamed. A
// new container that is not healthy in time is removed and the old one
// keeps running; the error says why (its exit code and last log line, or
// its failed probe's output) and wraps ErrUnhealthy.
func replaceStartFirst(ctx context.Context, rt Runtime, clk clock, c Container) error {
	in, rn := rt.(Inspector), rt.(Renamer)
	name, r := c.Name, c.Spec.Rollout
	tmp := name + RolloutSuffix
	// A new container left by an interrupted roll-out goes first.
	if err := rt.RemoveContainer(ctx, tmp); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("replace %s start-first: remove the leftover %s: %w", name, tmp, err)
	}
	c.Name = tmp
	if err := rt.CreateContainer(ctx, c); err != nil {
		return fmt.Errorf("replace %s start-first: create %s: %w", name, tmp, err)
	}
	if err := awaitHealthy(ctx, in, clk, tmp, r.MinHealthy, r.HealthyDeadline); err != nil {
		if rerr := rt.RemoveContainer(context.WithoutCancel(ctx), tmp); rerr != nil && !errors.Is(rerr, ErrNotFound) {
			return &rolloutFailure{why: err.Error(), err: fmt.Errorf("replace %s start-first: the new container %w; removing it failed too (%v); the old one keeps running", name, err, rerr)}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("replace %s start-first: the new container %w; it was removed and the old one keeps running", name, err)
		}
		return &rolloutFailure{why: err.Error(), err: fmt.Errorf("replace %s start-first: the new container %w; it was removed and the old one keeps running", name, err)}
	}
	if err := rt.RemoveContainer(ctx, name); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("replace %s start-first: remove the old container: %w", name, err)
	}
	if err := rn.RenameContainer(ctx, tmp, name); err != nil {
		return fmt.Errorf("replace %s start-first: rename %s: %w", name, tmp, err)
	}
	return nil
}

// awaitHealthy waits until the container name is healthy: its health check
// passed or, without one, it has run minHealthy without exiting. It fails
// at once when the container exits, restarts or is unhealthy, and after
// deadline when it is none of these; each error wraps ErrUnhealthy and says
// why.
func awaitHealthy(ctx context.Context, in Inspector, clk clock, name string, minHealthy, deadline time.Duration) error {
	start := clk.now()
	last := "not yet running"
	for {
		st, err := in.InspectContainer(ctx, name)
		if err != nil {
			return fmt.Errorf("could not be asked how it runs: %w", err)
		}
		switch {
		case st.Status == StatusExited || st.Status == StatusDead || st.Status == StatusRestarting || st.Restarts > 0:
			why := fmt.Sprintf("exited with code %d", st.ExitCode)
			if st.OOMKilled {
				why += " (killed for lack of memory)"
			}
			if st.Restarts > 0 {
				why += fmt.Sprintf(", %d restart(s)", st.Restarts)
			}
			if log, err := in.ContainerLogTail(ctx, name, 512); err == nil && strings.TrimSpace(log) != "" {
				why += ": " + lastLine(log)
			}
			return fmt.Errorf("%s: %w", why, ErrUnhealthy)
		case st.Health == HealthUnhealthy:
			why := "failed its health check"
			if st.HealthLog != "" {
				why += ": " + lastLine(st.HealthLog)
			}
			return fmt.Errorf("%s: %w", why, ErrUnhealthy)
		case st.Health == HealthHealthy:
			return nil
		case st.Status == StatusRunning && st.Health == "" && !st.StartedAt.IsZero() && clk.now().Sub(st.StartedAt) >= minHealthy:
			return nil
		case st.Status == StatusRunning && st.Health == HealthStarting:
			last = "its health check has not passed yet"
		case st.Status == StatusRunning:
			last = fmt.Sprintf("it had not run %s yet", minHealthy)
		}
		if clk.now().Sub(start) >= deadline {
			return fmt.Errorf("was not healthy within %s (%s): %w", deadline, last, ErrUnhealthy)
		}
		if err := clk.wait(ctx, min(rolloutPoll, deadline)); err != nil {
			return fmt.Errorf("was not healthy before the apply ended: %w", err)
		}
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// rolloutFailure is the error of a start-first roll-out whose new
// container was not healthy: the apply remembers the build (State.Failed).
type rolloutFailure struct {
	why string
	err error
}

func (f *rolloutFailure) Error() string { return f.err.Error() }
func (f *rolloutFailure) Unwrap() error { return f.err }

// nextFailed is State.Failed after an apply of d: what failed before and
// is still the declared build, and what failed now.
func nextFailed(before map[string]FailedRollout, d declaration.Declaration, now map[string]FailedRollout) map[string]FailedRollout {
	var out map[string]FailedRollout
	for _, r := range d.Resources {
		f, ok := now[r.Name]
		if !ok {
			f, ok = before[r.Name]
		}
		if !ok || f.Digest != r.Digest {
			continue
		}
		if out == nil {
			out = map[string]FailedRollout{}
		}
		out[r.Name] = f
	}
	return out
}
