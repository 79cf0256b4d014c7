package controller_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}

// liveController runs a controller with liveness on store, its clock
// clk, its checks driven by the test (CheckLiveness), until stop (or the
// test's end).
func liveController(t *testing.T, store events.Store, clk *fakeClock, standby bool) (c *controller.Controller, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	c, err = controller.New(controller.Config{
		Store: store, Publisher: newBus(), Clock: clk.Now, Ticks: make(chan time.Time),
		SilentAfter: 30 * time.Second, LivenessTicks: make(chan time.Time), Standby: standby,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	for !c.Running() {
		time.Sleep(time.Millisecond)
	}
	return c, stop
}

// check runs a liveness check at at and returns the types and nodes of
// what it appended.
func check(t *testing.T, c *controller.Controller, clk *fakeClock, at time.Time) []string {
	t.Helper()
	clk.Set(at)
	evs, err := c.CheckLiveness(context.Background())
	if err != nil {
		t.Fatalf("CheckLiveness at %s: %v", at, err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type+" "+ev.Stream)
	}
	return out
}

func nodeStatus(t *testing.T, c *controller.Controller, node string) api.NodeStatus {
	t.Helper()
	resp, err := c.Status(context.Background(), api.StatusRequest{Nodes: []string{node}})
	if err != nil || len(resp.Nodes) != 1 {
		t.Fatalf("status %s: %v, %v", node, resp, err)
	}
	return resp.Nodes[0]
}

// liveEvents are the liveness events store holds, "type stream" in order.
func liveEvents(t *testing.T, store events.Store) []string {
	t.Helper()
	evs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Type == events.TypeNodeWentSilent || ev.Type == events.TypeNodeCameBack {
			out = append(out, ev.Type+" "+ev.Stream)
		}
	}
	return out
}

// wantLive waits (a heard silent node is checked at once by Run, beside
// the test's own check) until store holds exactly want, in order.
func wantLive(t *testing.T, step string, store events.Store, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := liveEvents(t, store)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the store holds %v, want %v", step, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLivenessTransitions: with a fake clock, a node heard and then unheard
// for longer than the bound goes silent once (a fresh leader gives every node one
// bound of grace first), status says unreachable with its last seen, a
// check again appends nothing, a heartbeat brings it back once; a standby
// hears but records nothing; a new leader finding a node silent in
// history does not record it silent again, and records it back when heard.
func TestLivenessTransitions(t *testing.T) {
	store := memstore.New()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	c, stop := liveController(t, store, clk, false)
	ctx := context.Background()
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "tester", Nodes: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}

	c.Heard("b") // b's agent says hello at once, and never again
	var want []string
	check(t, c, clk, t0.Add(10*time.Second))
	wantLive(t, "within the grace", store, want...)
	clk.Set(t0.Add(20 * time.Second))
	c.Heard("a")
	if st := nodeStatus(t, c, "a"); st.LastSeen == nil || !st.LastSeen.Equal(t0.Add(20*time.Second)) || st.Sync == api.SyncUnreachable {
		t.Fatalf("a heard: %+v", st)
	}
	check(t, c, clk, t0.Add(31*time.Second))
	want = append(want, "node.went-silent node-b")
	wantLive(t, "b past the grace", store, want...)
	if st := nodeStatus(t, c, "b"); st.Sync != api.SyncUnreachable || st.LastSeen == nil || !st.LastSeen.Equal(t0) {
		t.Fatalf("b silent: sync %s, last seen %v", st.Sync, st.LastSeen)
	}
	check(t, c, clk, t0.Add(51*time.Second))
	want = append(want, "node.went-silent node-a")
	wantLive(t, "a past its bound", store, want...)
	check(t, c, clk, t0.Add(10*time.Minute))
	wantLive(t, "again", store, want...)
	if st := nodeStatus(t, c, "a"); st.Sync != api.SyncUnreachable || !st.LastSeen.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("a silent: sync %s, last seen %v", st.Sync, st.LastSeen)
	}

	back := t0.Add(10*time.Minute + 5*time.Second)
	clk.Set(back)
	c.Heard("a")
	check(t, c, clk, back)
	want = append(want, "node.came-back node-a")
	wantLive(t, "a heard again", store, want...)
	check(t, c, clk, back.Add(time.Second))
	wantLive(t, "again", store, want...)
	if st := nodeStatus(t, c, "a"); st.Sync == api.SyncUnreachable {
		t.Fatalf("a back: sync %s", st.Sync)
	}
	evs, err := store.ReadStream(ctx, "node-a", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := events.NewRegistry().Decode(evs[len(evs)-1])
	if err != nil {
		t.Fatal(err)
	}
	if cb, ok := p.(events.NodeCameBack); !ok || cb.SilentFor != "9m45s" || !cb.LastSeen.Equal(back) {
		t.Fatalf("came-back %+v: want silent for 9m45s (from its last heartbeat at 10:00:20)", p)
	}
	p, _ = events.NewRegistry().Decode(evs[len(evs)-2])
	if ws, ok := p.(events.NodeWentSilent); !ok || ws.Bound != "30s" || !ws.LastSeen.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("went-silent %+v", p)
	}

	// A standby on the same store hears, shows, and records nothing.
	stop() // the leader stops
	sb, _ := liveController(t, store, clk, true)
	check(t, sb, clk, back.Add(time.Hour))
	wantLive(t, "standby", store, want...)

	// A new leader: b is silent in history. It is not recorded silent
	// again; heard, it comes back.
	t1 := back.Add(2 * time.Hour)
	clk.Set(t1)
	nl, _ := liveController(t, store, clk, false)
	check(t, nl, clk, t1.Add(29*time.Second))
	wantLive(t, "new leader, within the grace", store, want...)
	clk.Set(t1.Add(29 * time.Second))
	nl.Heard("a")
	check(t, nl, clk, t1.Add(31*time.Second))
	wantLive(t, "new leader past the grace: b silent already, a heard", store, want...)
	clk.Set(t1.Add(40 * time.Second))
	nl.Heard("b")
	check(t, nl, clk, t1.Add(40*time.Second))
	want = append(want, "node.came-back node-b")
	wantLive(t, "b heard", store, want...)
}

// TestHeardAgentVersion: a heartbeat that says its agent's version shows
// it in status beside the last heartbeat; one that says none keeps the
// last said.
func TestHeardAgentVersion(t *testing.T) {
	store := memstore.New()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	c, stop := liveController(t, store, clk, false)
	defer stop()
	if _, err := c.RegisterNodes(context.Background(), api.RegisterNodesRequest{Operator: "tester", Nodes: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	c.HeardAgent("a", "v0.21.0")
	if st := nodeStatus(t, c, "a"); st.AgentVersion != "v0.21.0" || st.LastSeen == nil {
		t.Fatalf("a heard with its version: %+v", st)
	}
	c.HeardAgent("a", "")
	if st := nodeStatus(t, c, "a"); st.AgentVersion != "v0.21.0" {
		t.Errorf("a heard without a version: %q, want the last said", st.AgentVersion)
	}
	if st := nodeStatus(t, c, "b"); st.AgentVersion != "" {
		t.Errorf("b never heard: agent version %q", st.AgentVersion)
	}
}

// TestLivenessNeverHeard: a node joined whose agent starts minutes later
// is not silent meanwhile: no node.went-silent, its sync unreported (not
// unreachable), the metrics' view not unreachable either. Heard once, it
// is tracked as any node, and goes silent when unheard past the bound. A
// node whose history holds a report from it is one heard: a controller
// started since, which heard nothing of it, records it silent after the
// grace.
func TestLivenessNeverHeard(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	c, stop := liveController(t, store, clk, false)
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "tester", Nodes: []string{"late"}}); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{3 * time.Second, 31 * time.Second, 10 * time.Minute} {
		check(t, c, clk, t0.Add(at))
		wantLive(t, "never heard, "+at.String()+" after its join", store)
		if st := nodeStatus(t, c, "late"); st.Sync != projections.SyncUnreported || st.LastSeen != nil {
			t.Fatalf("never heard, %s after its join: sync %s, last seen %v; want unreported, none", at, st.Sync, st.LastSeen)
		}
		if _, unreachable, on := c.LastSeen("late"); !on || unreachable {
			t.Fatalf("never heard, %s after its join: the metrics' view says unreachable", at)
		}
	}
	heard := t0.Add(10*time.Minute + time.Second)
	clk.Set(heard)
	c.Heard("late") // its agent starts
	check(t, c, clk, heard.Add(time.Second))
	wantLive(t, "its first heartbeat", store)
	check(t, c, clk, heard.Add(31*time.Second))
	wantLive(t, "heard, then unheard past the bound", store, "node.went-silent node-late")

	// A report from it in history: a new leader that has not heard it
	// gives it the grace, then records it silent.
	stop()
	store2 := memstore.New()
	reg := events.NewRegistry()
	clk.Set(t0)
	c2, _ := liveController(t, store2, clk, false)
	if _, err := c2.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "tester", Nodes: []string{"old"}}); err != nil {
		t.Fatal(err)
	}
	ev, err := reg.New("node-old", events.ReportRefused{Node: "old", Reason: events.RefusedMalformed}, events.Meta{ID: uuid.New(), At: t0, Actor: "controller"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store2.Append(ctx, "node-old", events.Any, ev); err != nil {
		t.Fatal(err)
	}
	check(t, c2, clk, t0.Add(29*time.Second))
	wantLive(t, "reported once, within the grace", store2)
	check(t, c2, clk, t0.Add(31*time.Second))
	wantLive(t, "reported once, past the grace", store2, "node.went-silent node-old")
	if st := nodeStatus(t, c2, "old"); st.Sync != api.SyncUnreachable {
		t.Fatalf("reported once, past the grace: sync %s, want unreachable", st.Sync)
	}
}
