package commands_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/wire"
)

func crashLoop() events.ContainerChange {
	return events.ContainerChange{
		Node: "n1", Module: "forge", Container: "web", Declaration: "n1/3", State: events.WorkloadCrashLooping,
		At: doorNow.Add(-2 * time.Minute), ExitCode: 1, Restarts: 14, Since: doorNow.Add(-3 * time.Minute),
		Log: "cat: /no/such/file: No such file or directory\n",
	}
}

// TestCheckReportWorkload: the door takes a report's workload changes only
// of its node, its declaration and one of that declaration's containers,
// in a state of the list and within bounds; each other case is refused
// with its reason, the whole report with it.
func TestCheckReportWorkload(t *testing.T) {
	counted := commands.DeclarationFacts{Composed: true, ComposedAt: doorNow.Add(-time.Hour), Pushed: true,
		Resources: []string{"web", "db", "cache"}, Counted: true}
	tests := []struct {
		name   string
		edit   func(*events.ContainerChange)
		reason string // "": taken
	}{
		{"a crash loop of its own container", func(*events.ContainerChange) {}, ""},
		{"another node's", func(c *events.ContainerChange) { c.Node = "n2" }, events.RefusedMalformed},
		{"another declaration's", func(c *events.ContainerChange) { c.Declaration = "n1/2" }, events.RefusedMalformed},
		{"a container the declaration lacks", func(c *events.ContainerChange) { c.Container = "ssh" }, events.RefusedCounts},
		{"a state of no list", func(c *events.ContainerChange) { c.State = "fine" }, events.RefusedMalformed},
		{"a negative count", func(c *events.ContainerChange) { c.Restarts = -1 }, events.RefusedMalformed},
		{"a count beyond reason", func(c *events.ContainerChange) { c.Restarts = events.MaxContainerRestarts + 1 }, events.RefusedMalformed},
		{"an exit code of no process", func(c *events.ContainerChange) { c.ExitCode = 300 }, events.RefusedMalformed},
		{"no time", func(c *events.ContainerChange) { c.At = time.Time{} }, events.RefusedMalformed},
		{"since after at", func(c *events.ContainerChange) { c.Since = c.At.Add(time.Second) }, events.RefusedMalformed},
		{"a log over 4 KiB", func(c *events.ContainerChange) { c.Log = strings.Repeat("x", events.MaxContainerLog+1) }, events.RefusedMalformed},
		{"a log with a terminal escape", func(c *events.ContainerChange) { c.Log = "\x1b]0;owned\x07" }, events.RefusedMalformed},
		{"a health of no list", func(c *events.ContainerChange) { c.Health = "meh" }, events.RefusedMalformed},
		{"a container name with a newline", func(c *events.ContainerChange) { c.Container = "web\nfake" }, events.RefusedMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := crashLoop()
			tt.edit(&c)
			d := goodDelivery()
			d.Workload = &wire.Workload{Changes: []events.ContainerChange{c}}
			err := commands.CheckReport(d, &counted, doorNow)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			refusedFor(t, err, tt.reason)
		})
	}
	t.Run("too many changes", func(t *testing.T) {
		d := goodDelivery()
		d.Workload = &wire.Workload{Changes: make([]events.ContainerChange, wire.MaxWorkloadChanges+1)}
		refusedFor(t, commands.CheckReport(d, &counted, doorNow), events.RefusedMalformed)
	})
}

// TestRecordApplyRecordsWorkloadChanges: each change is its event beside
// the apply.reported, caused by it; the same report again records
// nothing more; a refused change records nothing at all.
func TestRecordApplyRecordsWorkloadChanges(t *testing.T) {
	ctx := context.Background()
	h, store := doorSetup(t)
	before := len(streamTypes(t, store, "node-n1"))
	bad := goodDelivery()
	bad.Workload = &wire.Workload{Changes: []events.ContainerChange{{Node: "n1", Container: "web", Declaration: "n1/3", State: "sulking", At: doorNow}}}
	if _, err := h.RecordApply(ctx, bad); err == nil {
		t.Fatal("a change of no state recorded")
	}
	if got := len(streamTypes(t, store, "node-n1")); got != before {
		t.Fatalf("a refused report appended %d events", got-before)
	}
	d := goodDelivery()
	unhealthy := crashLoop()
	unhealthy.Container, unhealthy.State, unhealthy.Output, unhealthy.Log = "db", events.WorkloadUnhealthy, "connection refused", ""
	d.Workload = &wire.Workload{Changes: []events.ContainerChange{crashLoop(), unhealthy}}
	stored, err := h.RecordApply(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range stored {
		types = append(types, ev.Type)
		if ev.Type != events.TypeApplyReported && ev.Causation != d.ApplyID.String() {
			t.Errorf("%s caused by %q, want the apply %s", ev.Type, ev.Causation, d.ApplyID)
		}
	}
	if got, want := strings.Join(types, " "), "apply.reported container.crash-looping container.unhealthy"; got != want {
		t.Fatalf("recorded %s, want %s", got, want)
	}
	p, err := events.NewRegistry().Decode(stored[1])
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := events.ContainerOf(p); !ok || c.Restarts != 14 || c.Log != crashLoop().Log {
		t.Fatalf("crash loop recorded as %+v", p)
	}
	again, err := h.RecordApply(ctx, d)
	if err != nil || len(again) == 0 || again[0].Position != stored[0].Position {
		t.Fatalf("the same report again: %v, %v", again, err)
	}
	if got := len(streamTypes(t, store, "node-n1")); got != before+3 {
		t.Fatalf("stream grew by %d, want 3", got-before)
	}
}
