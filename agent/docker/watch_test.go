package docker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"meshplane/agent"
	"meshplane/declaration"
	"meshplane/events"
)

// oneSource yields the declarations sent on it.
type oneSource chan declaration.Declaration

func (s oneSource) Declarations(context.Context) (<-chan declaration.Declaration, error) {
	return s, nil
}

// reports is a Reporter handing every report to a channel.
type reports chan agent.Report

func (r reports) Report(_ context.Context, rep agent.Report) (bool, error) {
	r <- rep
	return false, nil
}

func nextReport(t *testing.T, rs reports, within time.Duration, what string) events.ApplyReported {
	t.Helper()
	select {
	case rep := <-rs:
		return rep.Outcome
	case <-time.After(within):
		t.Fatalf("%s: no apply reported within %s", what, within)
		return events.ApplyReported{}
	}
}

// TestEngineEventsRunAPass: on the real engine, a running agent whose drift
// check is an hour away follows the engine's events: a container stopped
// behind its back is started again and reported (web updated, running)
// within seconds, one removed behind its back is created again and
// reported (what churn counts, as any removal), and what the agent does
// itself (replacing web for a new declaration) runs no pass of its own.
func TestEngineEventsRunAPass(t *testing.T) {
	r := newRT(t)
	src, rs := make(oneSource, 1), make(reports, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.RunConfig{
			Node: r.node, Runtime: r.Runtime, Outbox: agent.NewMemOutbox(), Source: src, Reporter: rs,
			Interval: time.Hour,
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	}()
	d := decl(r.node, "1", hosts1, forge("/srv/forge")...)
	src <- d
	if o := nextReport(t, rs, 90*time.Second, "first apply"); !slices.Contains(o.Created, "web") {
		t.Fatalf("first apply: %+v; want web created", o)
	}

	start := time.Now()
	if err := r.StopContainer("web"); err != nil {
		t.Fatal(err)
	}
	o := changedReport(t, rs, 20*time.Second, "a stop behind its back")
	if fmt.Sprint(o.Updated) != fmt.Sprint([]events.Replaced{{Name: "web", Fields: []string{"running"}}}) || o.Changes() != 0 {
		t.Fatalf("after a stop: %+v; want web updated (running)", o)
	}
	t.Logf("a stop behind the agent's back reported %s after it", time.Since(start).Round(time.Millisecond))
	if !r.inspect(t, "web").State.Running {
		t.Fatal("web not running again")
	}
	// The stop's own events (kill, die, stop) may come as one change or
	// several; each pass after the first finds nothing to do.
	drainQuiet(t, rs)

	if err := eng.ContainerRemove(context.Background(), r.inspect(t, "web").ID, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	o = changedReport(t, rs, 20*time.Second, "a removal behind its back")
	if !slices.Equal(o.Created, []string{"web"}) || o.Changes() != 1 {
		t.Fatalf("after a removal: %+v; want web created", o)
	}
	drainQuiet(t, rs)

	// The agent's own replace: one report, and no pass after it.
	c := web("/srv/forge")
	c.Env = append(c.Env, "GREETING=bonjour")
	d2 := decl(r.node, "2", hosts1, ctrRes("web", "forge", c), dirRes("forge-data", "forge", "/srv/forge", 0o700),
		fileRes("forge-conf", "forge", "/etc/forge/app.ini", "[server]\nport = 3000\n", 0o640))
	src <- d2
	if o := nextReport(t, rs, 90*time.Second, "a replace"); len(o.Replaced) != 1 || o.Replaced[0].Name != "web" {
		t.Fatalf("replace: %+v; want web replaced", o)
	}
	select {
	case rep := <-rs:
		t.Fatalf("a pass after the agent's own replace: %+v", rep.Outcome)
	case <-time.After(3 * time.Second):
	}
}

// changedReport is the first report with a change within within: a pass
// made while the engine was still carrying out the change (a removal's die
// comes before its destroy) finds nothing to do yet, and the next one
// does.
func changedReport(t *testing.T, rs reports, within time.Duration, what string) events.ApplyReported {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		o := nextReport(t, rs, time.Until(deadline), what)
		if o.Changes() != 0 || len(o.Updated) != 0 {
			return o
		}
	}
}

// drainQuiet takes the reports of passes that found nothing to do, until
// none comes for two seconds; a report with changes fails.
func drainQuiet(t *testing.T, rs reports) {
	t.Helper()
	for {
		select {
		case rep := <-rs:
			if o := rep.Outcome; o.Changes() != 0 || len(o.Updated) != 0 {
				t.Fatalf("a pass after the change was handled: %+v", o)
			}
		case <-time.After(2 * time.Second):
			return
		}
	}
}
