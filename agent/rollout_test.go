package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// simClock is a clock that a start-first roll-out's waits move: the
// agent's Now and Sleep and the simulated runtime's clock are one.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *simClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return ctx.Err()
}

// TestStartFirst: a container whose module rolls out start-first is
// replaced by a new container that ran healthy first, under its name; a
// new build that crashes, fails its health check or is not healthy within
// the deadline is removed while the old one keeps running, the resource
// failing with why; the failed build is not started again at the next
// pass; a runtime without Renamer replaces stop-first.
func TestStartFirst(t *testing.T) {
	roll := &declaration.Rollout{Order: declaration.RolloutStartFirst, MinHealthy: 10 * time.Second, HealthyDeadline: time.Minute}
	build := func(img string) declaration.Container {
		return declaration.Container{Image: img, Rollout: roll}
	}
	tests := []struct {
		name  string
		world func(*simruntime.Runtime)
		want  string // "" for a replace that took; else in the error
	}{
		{name: "healthy: runs min_healthy without exiting"},
		{name: "exits at start", world: func(rt *simruntime.Runtime) {
			rt.ImageCrashes("forge:2", 0, 1, "cat: /no/such/file: No such file or directory\n")
		}, want: "the new container exited with code 1"},
		{name: "crashes after 5 s", world: func(rt *simruntime.Runtime) {
			rt.ImageCrashes("forge:2", 5*time.Second, 2, "panic: boom\n")
		}, want: "exited with code 2"},
		{name: "unhealthy", world: func(rt *simruntime.Runtime) {
			rt.ImageUnhealthy("forge:2", "curl: (7) Failed to connect to localhost port 8080\n")
		}, want: "failed its health check: curl: (7) Failed to connect to localhost port 8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &simClock{t: epoch}
			rt := simruntime.New()
			rt.SetClock(clk.now)
			ag, err := agent.New(agent.Config{Node: "novox", Runtime: rt, Outbox: agent.NewMemOutbox(), Deliver: (&sink{}).deliver,
				Now: clk.now, Sleep: clk.sleep, NewID: ids()})
			if err != nil {
				t.Fatal(err)
			}
			if tt.world != nil {
				tt.world(rt)
			}
			if _, err := ag.Apply(context.Background(), decl("novox/1", ctr("web", "forge", build("forge:1")))); err != nil {
				t.Fatal(err)
			}
			d2 := decl("novox/2", ctr("web", "forge", build("forge:2")))
			rep, err := ag.Apply(context.Background(), d2)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := rt.Container("web")
			if tt.want == "" {
				if len(rep.Outcome.Failed) != 0 || len(rep.Outcome.Replaced) != 1 || !ok || c.Image != "forge:2" || !rt.Running("web") {
					t.Fatalf("a healthy start-first roll-out: %+v, web %+v", rep.Outcome, c)
				}
				if got := rt.Names(); len(got) != 1 {
					t.Fatalf("containers after the roll-out: %v, want web alone", got)
				}
				if took := clk.now().Sub(epoch); took < roll.MinHealthy {
					t.Fatalf("the old container stopped after %s, before the new one ran min_healthy %s", took, roll.MinHealthy)
				}
				return
			}
			if len(rep.Outcome.Failed) != 1 || !strings.Contains(rep.Outcome.Failed[0].Error, tt.want) ||
				!strings.Contains(rep.Outcome.Failed[0].Error, "the old one keeps running") {
				t.Fatalf("failed %+v\nwant web failing with %q", rep.Outcome.Failed, tt.want)
			}
			if w := rep.Workload; w == nil || len(w.Rollouts) != 1 || w.Rollouts[0].Module != "forge" || w.Rollouts[0].Container != "web" || w.Rollouts[0].Why == "" ||
				!strings.Contains(rep.Outcome.Failed[0].Error, w.Rollouts[0].Why) {
				t.Fatalf("the report's failed roll-outs: %+v", rep.Workload)
			}
			if !ok || c.Image != "forge:1" || !rt.Running("web") {
				t.Fatalf("the old container: %+v running %v, want forge:1 running", c, rt.Running("web"))
			}
			if got := rt.Names(); len(got) != 1 {
				t.Fatalf("containers after the failed roll-out: %v, want web alone (the new one removed)", got)
			}
			// The next pass does not start the failed build again.
			creates := rt.Creates("web" + agent.RolloutSuffix)
			rep, err = ag.Apply(context.Background(), d2)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Workload != nil && len(rep.Workload.Rollouts) != 0 {
				t.Fatalf("the next pass reports the failed roll-out again: %+v", rep.Workload.Rollouts)
			}
			if rt.Creates("web"+agent.RolloutSuffix) != creates || len(rep.Outcome.Failed) != 1 || !strings.Contains(rep.Outcome.Failed[0].Error, "not tried again") {
				t.Fatalf("the next pass: creates %d → %d, failed %+v", creates, rt.Creates("web"+agent.RolloutSuffix), rep.Outcome.Failed)
			}
			// Another build is tried.
			rep, err = ag.Apply(context.Background(), decl("novox/3", ctr("web", "forge", build("forge:3"))))
			if err != nil || len(rep.Outcome.Failed) != 0 {
				t.Fatalf("another build after a failed one: %v %+v", err, rep.Outcome.Failed)
			}
		})
	}
}

// TestStartFirstDeadline: a new container that never becomes healthy (its
// check stays "starting") fails at healthy_deadline, no later.
func TestStartFirstDeadline(t *testing.T) {
	clk := &simClock{t: epoch}
	rt := &neverHealthy{Runtime: simruntime.New()}
	rt.SetClock(clk.now)
	ag, err := agent.New(agent.Config{Node: "novox", Runtime: rt, Outbox: agent.NewMemOutbox(), Deliver: (&sink{}).deliver,
		Now: clk.now, Sleep: clk.sleep, NewID: ids()})
	if err != nil {
		t.Fatal(err)
	}
	roll := &declaration.Rollout{Order: declaration.RolloutStartFirst, MinHealthy: 10 * time.Second, HealthyDeadline: time.Minute}
	if _, err := ag.Apply(context.Background(), decl("novox/1", ctr("web", "forge", declaration.Container{Image: "forge:1", Rollout: roll}))); err != nil {
		t.Fatal(err)
	}
	start := clk.now()
	rep, err := ag.Apply(context.Background(), decl("novox/2", ctr("web", "forge", declaration.Container{Image: "forge:2", Rollout: roll})))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcome.Failed) != 1 || !strings.Contains(rep.Outcome.Failed[0].Error, "was not healthy within 1m0s (its health check has not passed yet)") {
		t.Fatalf("failed %+v", rep.Outcome.Failed)
	}
	if took := clk.now().Sub(start); took < time.Minute || took > time.Minute+time.Second {
		t.Fatalf("gave up after %s, want the deadline, 1m", took)
	}
}

// neverHealthy is a runtime whose containers' health checks never end.
type neverHealthy struct{ *simruntime.Runtime }

func (r *neverHealthy) InspectContainer(ctx context.Context, name string) (agent.ContainerState, error) {
	st, err := r.Runtime.InspectContainer(ctx, name)
	st.Health = agent.HealthStarting
	return st, err
}

// TestStartFirstWithoutRenamer: a runtime that cannot rename replaces
// stop-first, as before.
func TestStartFirstWithoutRenamer(t *testing.T) {
	sim := simruntime.New()
	rt := struct{ agent.Runtime }{sim}
	ag, err := agent.New(agent.Config{Node: "novox", Runtime: rt, Outbox: agent.NewMemOutbox(), Deliver: (&sink{}).deliver,
		Now: func() time.Time { return epoch }, NewID: ids()})
	if err != nil {
		t.Fatal(err)
	}
	roll := &declaration.Rollout{Order: declaration.RolloutStartFirst, MinHealthy: 10 * time.Second, HealthyDeadline: time.Minute}
	for i, img := range []string{"forge:1", "forge:2"} {
		rep, err := ag.Apply(context.Background(), decl("novox/"+img, ctr("web", "forge", declaration.Container{Image: img, Rollout: roll})))
		if err != nil || len(rep.Outcome.Failed) != 0 {
			t.Fatalf("apply %d: %v %+v", i, err, rep.Outcome.Failed)
		}
	}
	if c, _ := sim.Container("web"); c.Image != "forge:2" || sim.Creates("web"+agent.RolloutSuffix) != 0 {
		t.Fatalf("web %+v, %d new container(s) made: want forge:2 replaced stop-first", c, sim.Creates("web"+agent.RolloutSuffix))
	}
}
