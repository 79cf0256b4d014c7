package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// waiting is a runtime that records the order containers are created in,
// and says whether a container is healthy (agent.HealthWaiter).
type waiting struct {
	*simruntime.Runtime
	created, waited []string
	unhealthy       map[string]bool
}

func (w *waiting) CreateContainer(ctx context.Context, c agent.Container) error {
	w.created = append(w.created, c.Name)
	return w.Runtime.CreateContainer(ctx, c)
}

func (w *waiting) WaitHealthy(_ context.Context, name string) error {
	w.waited = append(w.waited, name)
	if w.unhealthy[name] {
		return fmt.Errorf("%s: health unhealthy: %w", name, agent.ErrUnhealthy)
	}
	return nil
}

// TestDependsOnOrdersAndWaits: containers are created after those they
// depend on, whatever their names' order; a service_healthy dependency is
// waited for, and one that is not healthy fails its dependents, naming it,
// and nothing else.
func TestDependsOnOrdersAndWaits(t *testing.T) {
	dep := func(img string, deps ...declaration.Dependency) declaration.Container {
		c := image(img)
		c.DependsOn = deps
		return c
	}
	d := decl("novox/1",
		ctr("a-first", "forge", image("x:1")),
		ctr("app", "forge", dep("app:1", declaration.Dependency{Container: "db", Condition: "service_healthy"})),
		ctr("cron", "forge", dep("cron:1", declaration.Dependency{Container: "app", Condition: "service_started"})),
		ctr("db", "forge", image("postgres:16")),
	)
	for _, tt := range []struct {
		name      string
		unhealthy map[string]bool
		created   []string
		failed    map[string]string // container → what its error names
	}{
		{"all healthy", nil, []string{"a-first", "db", "app", "cron"}, nil},
		{"db unhealthy", map[string]bool{"db": true}, []string{"a-first", "db"}, map[string]string{
			"app":  "create app: not started: it depends on db being healthy: db: health unhealthy: not healthy",
			"cron": "create cron: not started: it depends on app, which failed",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &waiting{Runtime: simruntime.New(), unhealthy: tt.unhealthy}
			ag, err := agent.New(agent.Config{Node: "novox", Runtime: rt, Outbox: agent.NewMemOutbox(),
				Deliver: func(context.Context, agent.Report) error { return nil }, Now: func() time.Time { return epoch }, NewID: ids()})
			if err != nil {
				t.Fatal(err)
			}
			r, err := ag.Apply(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rt.created, tt.created) {
				t.Errorf("created %v, want %v", rt.created, tt.created)
			}
			if !slices.Equal(rt.waited, []string{"db"}) {
				t.Errorf("waited for %v, want [db]", rt.waited)
			}
			got := map[string]string{}
			for _, f := range r.Outcome.Failed {
				got[f.Name] = f.Error
			}
			if len(got) != len(tt.failed) {
				t.Fatalf("failed %v, want %v", got, tt.failed)
			}
			for name, want := range tt.failed {
				if !strings.Contains(got[name], want) {
					t.Errorf("%s failed with %q, want it to name %q", name, got[name], want)
				}
			}
		})
	}
}
