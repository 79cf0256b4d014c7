package simruntime_test

import (
	"context"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// TestWorld: what the world makes a container do is what an engine would
// say of it, on the runtime's clock.
func TestWorld(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 7, 18, 59, 30, 0, time.UTC)
	tests := []struct {
		name  string
		world func(r *simruntime.Runtime) error
		after time.Duration
		want  agent.ContainerState
		log   string
	}{
		{"plain", func(*simruntime.Runtime) error { return nil }, time.Minute,
			agent.ContainerState{Status: "running", StartedAt: t0}, ""},
		// 100 ms, 200 ms, ... 51.2 s: 10 restarts by 102.3 s; the 11th
		// waits 60 s more.
		{"exit at every start", func(r *simruntime.Runtime) error { return r.ExitAtStart("web", 1, "cat: /no/such/file") }, 150 * time.Second,
			agent.ContainerState{Status: "restarting", ExitCode: 1, Restarts: 10, StartedAt: t0.Add(102300 * time.Millisecond), FinishedAt: t0.Add(102300 * time.Millisecond)},
			"cat: /no/such/file\n"},
		{"crash after 30 s, running", func(r *simruntime.Runtime) error { return r.CrashAfter("web", 30*time.Second, 2, "panic") }, 20 * time.Second,
			agent.ContainerState{Status: "running", StartedAt: t0}, "panic\n"},
		{"crash after 30 s, crashed once", func(r *simruntime.Runtime) error { return r.CrashAfter("web", 30*time.Second, 2, "panic") }, 30050 * time.Millisecond,
			agent.ContainerState{Status: "restarting", ExitCode: 2, StartedAt: t0, FinishedAt: t0.Add(30 * time.Second)}, "panic\n"},
		{"killed for memory", func(r *simruntime.Runtime) error { return r.KillOOM("web") }, time.Minute,
			agent.ContainerState{Status: "exited", ExitCode: 137, OOMKilled: true, StartedAt: t0, FinishedAt: t0}, ""},
		{"unhealthy", func(r *simruntime.Runtime) error { return r.Unhealthy("web", "probe: \x1b[1mrefused") }, time.Minute,
			agent.ContainerState{Status: "running", StartedAt: t0, Health: "unhealthy", HealthLog: `probe: \x1b[1mrefused`}, ""},
		{"runs again", func(r *simruntime.Runtime) error {
			if err := r.ExitAtStart("web", 1, "boom"); err != nil {
				return err
			}
			return r.RunsAgain("web")
		}, time.Minute, agent.ContainerState{Status: "running", StartedAt: t0, FinishedAt: t0}, "boom\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			r := simruntime.New()
			r.SetClock(func() time.Time { return now })
			spec := declaration.Container{Image: "img:1"}
			if err := r.CreateContainer(ctx, agent.Container{Name: "web", Module: "m", Digest: declaration.Digest(spec), Spec: spec}); err != nil {
				t.Fatal(err)
			}
			if err := tt.world(r); err != nil {
				t.Fatal(err)
			}
			now = t0.Add(tt.after)
			got, err := r.InspectContainer(ctx, "web")
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Name = "web"
			if got != tt.want {
				t.Errorf("state\n got %+v\nwant %+v", got, tt.want)
			}
			log, err := r.ContainerLogTail(ctx, "web", agent.MaxLogTail)
			if err != nil || log != tt.log {
				t.Errorf("log %q (%v), want %q", log, err, tt.log)
			}
			cs, err := r.ListContainers(ctx)
			if err != nil || len(cs) != 1 || cs[0].Stopped != (got.Status == "exited") {
				t.Errorf("listed %+v (%v) for %s", cs, err, got.Status)
			}
		})
	}
	if err := simruntime.New().ExitAtStart("ghost", 1, ""); err == nil {
		t.Error("a crash of no container: no error")
	}
}
