package docker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/declaration"
)

// TestStartFirstOnTheEngine: on the real engine, a start-first roll-out
// starts the new build beside the old one, waits until it ran min_healthy,
// then removes the old and renames the new to the resource's name, which
// the next pass lists as unchanged; a new build that exits at start is
// removed and the old container, the same one, keeps running; the failure
// names the exit code and the log line.
func TestStartFirstOnTheEngine(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	roll := &declaration.Rollout{Order: declaration.RolloutStartFirst, MinHealthy: time.Second, HealthyDeadline: 30 * time.Second}
	build := func(port string, cmd ...string) declaration.Container {
		c := declaration.Container{Image: testRef, Command: []string{"serve", "--port", port}, Rollout: roll}
		if cmd != nil {
			c.Command = cmd
		}
		return c
	}
	if o := apply(t, ag, decl(r.node, "1", hosts1, ctrRes("web", "forge", build("3000")))); len(o.Created) != 1 || len(o.Failed) != 0 {
		t.Fatalf("first apply: %+v", o)
	}
	first := r.inspect(t, "web").ID

	start := time.Now()
	d2 := decl(r.node, "2", hosts1, ctrRes("web", "forge", build("3001")))
	if o := apply(t, ag, d2); len(o.Replaced) != 1 || len(o.Failed) != 0 {
		t.Fatalf("a healthy start-first roll-out: %+v", o)
	}
	second := r.inspect(t, "web")
	if second.ID == first || !slices.Contains(second.Config.Cmd, "3001") || !second.State.Running {
		t.Fatalf("web after the roll-out: %s %v running %v, want a new container of the new build", second.ID, second.Config.Cmd, second.State.Running)
	}
	if took := time.Since(start); took < roll.MinHealthy {
		t.Fatalf("replaced in %s, before min_healthy %s", took, roll.MinHealthy)
	}
	if _, err := r.InspectContainer(context.Background(), "web"+agent.RolloutSuffix); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("the temporary name after the roll-out: %v, want not found", err)
	}
	if st, err := r.InspectContainer(context.Background(), "web"); err != nil || st.Status != agent.StatusRunning {
		t.Fatalf("web, renamed, as the runtime finds it: %+v %v", st, err)
	}
	noChange(t, apply(t, ag, d2))

	o := apply(t, ag, decl(r.node, "3", hosts1, ctrRes("web", "forge", build("", "cat", "/no/such/file"))))
	if len(o.Failed) != 1 || !strings.Contains(o.Failed[0].Error, "exited with code 1") ||
		!strings.Contains(o.Failed[0].Error, "no/such/file") || !strings.Contains(o.Failed[0].Error, "the old one keeps running") {
		t.Fatalf("a build that exits at start: %+v", o)
	}
	if in := r.inspect(t, "web"); in.ID != second.ID || !in.State.Running {
		t.Fatalf("web after a failed roll-out: %s running %v, want %s still running", in.ID, in.State.Running, second.ID)
	}
	if _, err := r.InspectContainer(context.Background(), "web"+agent.RolloutSuffix); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("the failed build's container: %v, want removed", err)
	}
	if err := r.RemoveContainer(context.Background(), "web"); err != nil {
		t.Fatalf("remove the renamed web: %v", err)
	}
}
