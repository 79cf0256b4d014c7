package docker_test

import (
	"context"
	"testing"
	"time"

	dockerevents "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"meshplane/agent"
	"meshplane/events"
	"meshplane/projections"
)

// TestCrashLoopSaidWithin: on the real engine, a container that exits at
// every start (the test image's `cat /no/such/file`) is reported
// crash-looping, with its exit code and the log line, by a running agent
// whose drift check is an hour away: the engine's die event runs the pass.
// It logs the time from the engine's first die event (the engine's own
// clock, the ceiling) to the report that says so, which the door records
// and status folds in-process. The figure is BENCHMARKS.md's ("Issue 34").
func TestCrashLoopSaidWithin(t *testing.T) {
	r := newRT(t)
	// The engine's own events of this node: the first die is when the
	// container died, by the engine.
	ectx, ecancel := context.WithCancel(context.Background())
	defer ecancel()
	msgs, _ := eng.Events(ectx, dockerevents.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", string(dockerevents.ContainerEventType)),
		filters.Arg("label", agent.LabelNode+"="+r.node),
		filters.Arg("event", string(dockerevents.ActionDie)),
	)})
	firstDie := make(chan time.Time, 1)
	go func() {
		for m := range msgs {
			select {
			case firstDie <- time.Unix(0, m.TimeNano):
			default:
			}
		}
	}()

	src, rs := make(oneSource, 1), make(reports, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.RunConfig{
			Node: r.node, Runtime: r.Runtime, Outbox: agent.NewMemOutbox(), Source: src, Reporter: rs,
			Interval: time.Hour, FollowContainers: true,
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	}()
	c := web("/srv/forge")
	c.Command = []string{"cat", "/no/such/file"}
	rs0 := forge("/srv/forge")
	rs0[0] = ctrRes("web", "forge", c)
	d := decl(r.node, "1", hosts1, rs0...)
	src <- d

	deadline := time.After(90 * time.Second)
	for {
		var rep agent.Report
		select {
		case rep = <-rs:
		case <-deadline:
			t.Fatal("no report said web crash-looping within 90 s")
		}
		said := time.Now()
		for _, ch := range rep.Workload.List() {
			if ch.Container != "web" || ch.State != events.WorkloadCrashLooping {
				continue
			}
			if ch.ExitCode != 1 || ch.Restarts < 1 || projections.LastLine(ch.Log) != "open /no/such/file: no such file or directory" {
				t.Fatalf("crash loop said as %+v", ch)
			}
			var died time.Time
			select {
			case died = <-firstDie:
			case <-time.After(5 * time.Second):
				t.Fatal("the engine's die event never came")
			}
			// What status shows of it: the door records the change and the
			// projection folds it, both in-process.
			t.Logf("crash loop said %s after the engine's first die event (restarts %d, since %s); the engine's own event is the ceiling: %s",
				said.Sub(died).Round(time.Millisecond), ch.Restarts, ch.Since.Format(time.RFC3339Nano), died.Format(time.RFC3339Nano))
			return
		}
	}
}
