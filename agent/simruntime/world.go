package simruntime

import (
	"context"
	"fmt"
	"strings"
	"time"

	"meshplane/agent"
)

// How a simulated container runs (agent.Inspector), and what the world
// outside the mesh can make it do, as a real engine's containers do:
// exit at every start (ExitAtStart, which holds for the name until
// RunsAgain, whatever container is made under it: the engine restarts it with a growing
// back-off, restartDelay, so it is "restarting" with a restart count that
// grows with time), crash after running a while (CrashAfter), fail or pass
// its health check (Unhealthy, Healthy), be killed for lack of memory
// (KillOOM), and run again (RunsAgain). Time is the runtime's clock
// (SetClock; the wall clock by default), so a simulation that moves its
// own clock sees restarts pile up without waiting. What the world set is
// held in memory only: a runtime reopened from its file (Open) runs its
// containers plainly again.

// behaviour is what the world made a container do.
type behaviour struct {
	exitCode   int           // the code of each crash
	crashAfter time.Duration // 0: at once (exit at start)
	since      time.Time     // when it began
	log        string        // what each run prints before it dies
}

// SetClock sets the clock the runtime reads (for the times of a
// container's state and how far a crash loop has come). Nil is the wall
// clock.
func (r *Runtime) SetClock(now func() time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = now
}

// clock is the runtime's now. Called with r.mu held.
func (r *Runtime) clock() time.Time {
	if r.now != nil {
		return r.now().UTC()
	}
	return time.Now().UTC()
}

// restartDelay is the engine's back-off before restart k (0-based): 100 ms
// doubling, at most a minute (Docker's).
func restartDelay(k int) time.Duration {
	d := 100 * time.Millisecond
	for i := 0; i < k && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// world returns the container name for a change from outside. Called with
// r.mu held.
func (r *Runtime) world(op, name string) (*container, error) {
	c, ok := r.containers[name]
	if !ok {
		return nil, fmt.Errorf("simruntime: %s %s: %w", op, name, agent.ErrNotFound)
	}
	return c, nil
}

// ExitAtStart makes the container name exit with code at every start from
// now on, printing log each time (a missing file, a bad configuration): the
// engine restarts it, with its back-off, for ever.
func (r *Runtime) ExitAtStart(name string, code int, log string) error {
	return r.CrashAfter(name, 0, code, log)
}

// CrashAfter makes the container name crash with code after running for
// after, at every start from now on, printing log each time.
func (r *Runtime) CrashAfter(name string, after time.Duration, code int, log string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.world("crash", name)
	if err != nil {
		return err
	}
	if after < 0 {
		return fmt.Errorf("simruntime: crash %s: negative time %s: %w", name, after, agent.ErrInvalid)
	}
	now := r.clock()
	c.crash = &behaviour{exitCode: code, crashAfter: after, since: now, log: log}
	// It holds for the name: a container made under it later crashes too.
	if r.crashes == nil {
		r.crashes = map[string]behaviour{}
	}
	r.crashes[name] = *c.crash
	c.oom = false
	if c.startedAt.IsZero() {
		c.startedAt = now
	}
	return nil
}

// RunsAgain ends what the world made the container name do: it crashes no
// more, and runs (started now, if it was not running).
func (r *Runtime) RunsAgain(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.world("run again", name)
	if err != nil {
		return err
	}
	delete(r.crashes, name)
	if c.crash != nil {
		st := r.stateOf(name, c)
		// It ran (and died) before: its count, its last death and its log
		// stay, as an engine's; the exit code is cleared at the start.
		c.restarts, c.exitCode, c.finishedAt = st.Restarts, 0, st.FinishedAt
		c.startedAt = r.clock()
		c.logs = st.log
		c.crash = nil
	}
	if c.stopped {
		c.stopped, c.startedAt = false, r.clock()
	}
	return r.save()
}

// Unhealthy makes the container name's health check fail from now on, its
// last probe printing output.
func (r *Runtime) Unhealthy(name, output string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.world("unhealthy", name)
	if err != nil {
		return err
	}
	c.health, c.healthLog = agent.HealthUnhealthy, output
	return nil
}

// Healthy makes the container name's health check pass from now on.
func (r *Runtime) Healthy(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.world("healthy", name)
	if err != nil {
		return err
	}
	c.health, c.healthLog = agent.HealthHealthy, ""
	return nil
}

// KillOOM kills the container name for lack of memory, as the kernel
// would: it exits with code 137, OOM-killed, and stays down until started.
func (r *Runtime) KillOOM(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.world("kill", name)
	if err != nil {
		return err
	}
	c.crash = nil
	c.stopped, c.oom, c.exitCode, c.finishedAt = true, true, 137, r.clock()
	return r.save()
}

// simState is a container's state with the log of its last run.
type simState struct {
	agent.ContainerState
	log string
}

// stateOf is the state of c now. Called with r.mu held.
func (r *Runtime) stateOf(name string, c *container) simState {
	now := r.clock()
	st := simState{ContainerState: agent.ContainerState{
		Name: name, Status: agent.StatusRunning, Restarts: c.restarts, ExitCode: c.exitCode,
		OOMKilled: c.oom, StartedAt: c.startedAt, FinishedAt: c.finishedAt,
		Health: c.health, HealthLog: agent.EscapeLog(c.healthLog, agent.MaxHealthLog),
	}, log: c.logs}
	if c.stopped {
		st.Status = agent.StatusExited
		return st
	}
	b := c.crash
	if b == nil {
		return st
	}
	// Run the crash loop from b.since to now: each run lasts crashAfter,
	// then the engine waits its back-off and starts it again.
	at, k := b.since, 0
	if !c.startedAt.IsZero() && c.startedAt.After(at) {
		at = c.startedAt
	}
	st.log = b.log
	st.ExitCode = b.exitCode
	for i := 0; i < 1_000_000; i++ {
		died := at.Add(b.crashAfter)
		if died.After(now) {
			// Running between two crashes: the engine clears the exit
			// code at a start.
			st.Status, st.StartedAt = agent.StatusRunning, at
			if k > 0 || b.crashAfter > 0 {
				st.ExitCode = 0
			}
			return st
		}
		st.FinishedAt = died
		next := died.Add(restartDelay(k))
		if next.After(now) {
			st.Status = agent.StatusRestarting
			return st
		}
		st.Restarts++
		st.StartedAt = next
		at, k = next, k+1
	}
	st.Status = agent.StatusRestarting
	return st
}

// InspectContainer implements agent.Inspector.
func (r *Runtime) InspectContainer(ctx context.Context, name string) (agent.ContainerState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpInspect, name); err != nil {
		return agent.ContainerState{}, err
	}
	c, err := r.managed("inspect", name)
	if err != nil {
		return agent.ContainerState{}, err
	}
	return r.stateOf(name, c).ContainerState, nil
}

// ContainerLogTail implements agent.Inspector: what the container's last
// run printed.
func (r *Runtime) ContainerLogTail(ctx context.Context, name string, maxBytes int) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpInspect, name); err != nil {
		return "", err
	}
	c, err := r.managed("log of", name)
	if err != nil {
		return "", err
	}
	log := r.stateOf(name, c).log
	if log != "" && !strings.HasSuffix(log, "\n") {
		log += "\n"
	}
	return agent.EscapeLog(log, maxBytes), nil
}

// managed returns the managed container name. Called with r.mu held.
func (r *Runtime) managed(op, name string) (*container, error) {
	if err := agent.ValidateContainerName(name); err != nil {
		return nil, fmt.Errorf("simruntime: %s: %w", op, err)
	}
	c, ok := r.containers[name]
	if !ok || c.labels[agent.LabelManaged] != "true" {
		return nil, fmt.Errorf("simruntime: %s %s: managed container %w", op, name, agent.ErrNotFound)
	}
	return c, nil
}

// imageWorld is what every container of an image does from its start.
type imageWorld struct {
	crash     *behaviour
	unhealthy *string
}

// ImageCrashes makes every container created from image from now on
// crash with code after running for after (0: at its start), printing
// log each time: a build that does not work.
func (r *Runtime) ImageCrashes(image string, after time.Duration, code int, log string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if after < 0 {
		return fmt.Errorf("simruntime: crash image %s: negative time %s: %w", image, after, agent.ErrInvalid)
	}
	if r.images == nil {
		r.images = map[string]imageWorld{}
	}
	w := r.images[image]
	w.crash = &behaviour{exitCode: code, crashAfter: after, log: log}
	r.images[image] = w
	return nil
}

// ImageUnhealthy makes every container created from image from now on
// fail its health check, its last probe printing output.
func (r *Runtime) ImageUnhealthy(image, output string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.images == nil {
		r.images = map[string]imageWorld{}
	}
	w := r.images[image]
	w.unhealthy = &output
	r.images[image] = w
	return nil
}

// RenameContainer implements agent.Renamer.
func (r *Runtime) RenameContainer(ctx context.Context, from, to string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx, OpRename, from); err != nil {
		return err
	}
	if err := agent.ValidateContainerName(to); err != nil {
		return fmt.Errorf("simruntime: rename %s: %w", from, err)
	}
	c, err := r.managed("rename", from)
	if err != nil {
		return err
	}
	if _, ok := r.containers[to]; ok {
		return fmt.Errorf("simruntime: rename %s to %s: container %w", from, to, agent.ErrExists)
	}
	delete(r.containers, from)
	r.containers[to] = c
	return r.save()
}
