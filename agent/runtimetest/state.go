package runtimetest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
)

// The state part of the suite, for a runtime that is an agent.Inspector:
// a plain container is running with no health; a missing one is
// ErrNotFound; and, when the runtime's world can do it, a container that
// exits at every start is a crash loop (restarting, its exit code, a
// restart count that grows, the log of its last run), and one whose health
// check fails, then passes, says so with the probe's output.

// Crasher is implemented by runtimes whose world can make a managed
// container exit with code at every start, printing log (a real engine
// does it with the container's command; the suite's log is what the test
// image prints for a missing file).
type Crasher interface {
	ExitAtStart(name string, code int, log string) error
}

// HealthWorld is implemented by runtimes whose world can make a managed
// container's health check fail (its probe printing output) or pass. A
// container of image HealthImage has a health check; the suite creates it
// with that image.
type HealthWorld interface {
	Unhealthy(name, output string) error
	Healthy(name string) error
}

// HealthImage is the image a runtime's test maps to one with a health
// check (Docker's HEALTHCHECK).
const HealthImage = "registry:5000/rtsuite/health:1"

// CrashLog is what the suite's crashing container prints: the test
// image's `cat /no/such/file`.
const CrashLog = "open /no/such/file: no such file or directory"

// HealthOutput is what the suite's failing probe prints.
const HealthOutput = "open /data/healthy: no such file or directory"

var stateTests = []suiteTest{
	{"StateRunning", testStateRunning},
	{"StateMissing", testStateMissing},
	{"StateCrashLoop", testStateCrashLoop},
	{"StateHealth", testStateHealth},
}

func inspector(t *testing.T, rt agent.Runtime) agent.Inspector {
	t.Helper()
	in, ok := rt.(agent.Inspector)
	if !ok {
		t.Fatalf("%T is no agent.Inspector", rt)
	}
	return in
}

// waitState inspects name until ok says yes, for up to 30 s.
func waitState(t *testing.T, in agent.Inspector, name, what string, ok func(agent.ContainerState) bool) agent.ContainerState {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := in.InspectContainer(context.Background(), name)
		if err != nil {
			t.Fatalf("inspect %s: %v", name, err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s within 30 s: %+v", name, what, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testStateRunning(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	mounts(t, ctx, rt)
	before := time.Now().Add(-2 * time.Second)
	if err := rt.CreateContainer(ctx, managed("web", "forge", "img:1")); err != nil {
		t.Fatalf("create: %v", err)
	}
	st := waitState(t, inspector(t, rt), "web", "running", func(s agent.ContainerState) bool { return s.Status == agent.StatusRunning })
	if st.Name != "web" || st.ExitCode != 0 || st.OOMKilled || st.Restarts != 0 || st.Health != "" {
		t.Errorf("a plain running container: %+v", st)
	}
	if st.StartedAt.Before(before) || st.StartedAt.After(time.Now().Add(2*time.Second)) {
		t.Errorf("started at %s, not about now", st.StartedAt)
	}
}

func testStateMissing(t *testing.T, rt agent.Runtime) {
	in := inspector(t, rt)
	if _, err := in.InspectContainer(context.Background(), "ghost"); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("inspect ghost: %v, want ErrNotFound", err)
	}
	if _, err := in.ContainerLogTail(context.Background(), "ghost", 100); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("log of ghost: %v, want ErrNotFound", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := in.InspectContainer(ctx, "ghost"); !errors.Is(err, context.Canceled) {
		t.Errorf("inspect with a cancelled context: %v, want context.Canceled", err)
	}
}

func testStateCrashLoop(t *testing.T, rt agent.Runtime) {
	cr, ok := rt.(Crasher)
	if !ok {
		noWorld(t, "the runtime's world cannot make a container crash")
	}
	ctx := context.Background()
	mounts(t, ctx, rt)
	if err := rt.CreateContainer(ctx, managed("web", "forge", "img:1")); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := cr.ExitAtStart("web", 1, CrashLog); err != nil {
		t.Fatalf("exit at start: %v", err)
	}
	in := inspector(t, rt)
	// Between two crashes it runs for a moment, with no exit code (the
	// engine clears it at a start): the loop is seen restarting.
	st := waitState(t, in, "web", "restarting after two restarts", func(s agent.ContainerState) bool {
		return s.Restarts >= 2 && s.Status == agent.StatusRestarting
	})
	if st.ExitCode != 1 || st.FinishedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Errorf("a crash loop: %+v, want exit code 1 and when, after its last start", st)
	}
	got, err := rt.ListContainers(ctx)
	if err != nil || len(got) != 1 || got[0].Stopped {
		t.Errorf("a restarting container listed %+v (%v), want it not stopped: the engine is at it", got, err)
	}
	tail, err := in.ContainerLogTail(ctx, "web", agent.MaxLogTail)
	if err != nil || !strings.Contains(tail, CrashLog) {
		t.Errorf("log tail %q (%v), want it to hold %q", tail, err, CrashLog)
	}
	if short, err := in.ContainerLogTail(ctx, "web", 10); err != nil || len(short) > 10 {
		t.Errorf("log tail of 10 bytes: %q (%v)", short, err)
	}
}

func testStateHealth(t *testing.T, rt agent.Runtime) {
	hw, ok := rt.(HealthWorld)
	if !ok {
		noWorld(t, "the runtime's world cannot make a health check fail")
	}
	ctx := context.Background()
	mounts(t, ctx, rt)
	if err := rt.CreateContainer(ctx, managed("web", "forge", HealthImage)); err != nil {
		t.Fatalf("create: %v", err)
	}
	in := inspector(t, rt)
	if err := hw.Healthy("web"); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	waitState(t, in, "web", "healthy", func(s agent.ContainerState) bool { return s.Health == agent.HealthHealthy })
	if err := hw.Unhealthy("web", HealthOutput); err != nil {
		t.Fatalf("unhealthy: %v", err)
	}
	st := waitState(t, in, "web", "unhealthy", func(s agent.ContainerState) bool { return s.Health == agent.HealthUnhealthy })
	if st.Status != agent.StatusRunning || !strings.Contains(st.HealthLog, HealthOutput) {
		t.Errorf("unhealthy: %+v, want running with the probe's output %q", st, HealthOutput)
	}
	if err := hw.Healthy("web"); err != nil {
		t.Fatalf("healthy again: %v", err)
	}
	waitState(t, in, "web", "healthy again", func(s agent.ContainerState) bool { return s.Health == agent.HealthHealthy })
}

// noWorld skips a case the runtime's world cannot set up, loudly; under CI
// (CI=true) it fails instead: every runtime the suite runs in CI (Docker,
// simruntime) can, and a skip there would hide a case that no longer runs.
func noWorld(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: a conformance case may not skip)", why)
	}
	t.Skipf("SKIPPED: %s", why)
}
