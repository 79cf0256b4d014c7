package controllerd

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"meshplane/api"
	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

type nopPublisher struct{}

func (nopPublisher) PutDeclaration(context.Context, declaration.Declaration) error { return nil }

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// TestHeartbeatSilentCameBack: agents heartbeat over a real embedded NATS,
// the controller (a fake clock, its liveness check driven by the test)
// hears them; a node unheard past the bound goes silent once, however
// often it is checked, and comes back once at its next heartbeat; a
// heartbeat another node sends in b's name never counts for b, which,
// never heard, is never silent either.
func TestHeartbeatSilentCameBack(t *testing.T) {
	srv := natstest.Start(t)
	bc := natstest.Controller(t, srv)
	store := memstore.New()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clk := &testClock{now: t0}
	ctl, err := controller.New(controller.Config{
		Store: store, Publisher: nopPublisher{}, Clock: clk.Now, Ticks: make(chan time.Time),
		SilentAfter: 30 * time.Second, LivenessTicks: make(chan time.Time), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	stop, err := hearHeartbeats(bc, ctl, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop(ctx)
	if _, err := ctl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "tester", Nodes: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	a := natstest.Node(t, srv, "a")

	// a heartbeats; a forged heartbeat in b's name on a's own subject (all
	// a's user may publish on) is ignored.
	raw := rawConn(t, srv, "a")
	heartbeatUntilSeen(t, ctl, clk, a, t0.Add(10*time.Second))
	if err := raw.Publish(bus.HeartbeatSubject("a"), []byte(`{"node":"b","at":"2026-12-02T10:00:10Z"}`)); err != nil {
		t.Fatal(err)
	}
	// Then a's own, on the same connection: once it is heard, so was the
	// forged one.
	clk.Set(t0.Add(11 * time.Second))
	deadline := time.Now().Add(10 * time.Second)
	for st := status(t, ctl, "a"); st.LastSeen == nil || !st.LastSeen.Equal(t0.Add(11*time.Second)); st = status(t, ctl, "a") {
		if err := raw.Publish(bus.HeartbeatSubject("a"), []byte(`{"node":"a","at":"2026-12-02T10:00:11Z"}`)); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a's heartbeat on its raw connection not heard within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := status(t, ctl, "b"); st.LastSeen != nil {
		t.Fatalf("b seen at %v: only a heartbeated", st.LastSeen)
	}

	var want []string
	checkAt(t, ctl, clk, t0.Add(35*time.Second))
	wantLiveness(t, store, want) // a heard 24 s ago; b never heard, so never silent
	if st := status(t, ctl, "b"); st.Sync == api.SyncUnreachable {
		t.Fatalf("b, never heard: sync %s, want unreported", st.Sync)
	}
	checkAt(t, ctl, clk, t0.Add(42*time.Second))
	want = append(want, "node.went-silent a")
	wantLiveness(t, store, want)
	for _, at := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
		checkAt(t, ctl, clk, t0.Add(at))
	}
	wantLiveness(t, store, want) // silent for a day: nothing more
	st := status(t, ctl, "a")
	if st.Sync != api.SyncUnreachable || st.LastSeen == nil || !st.LastSeen.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("a silent: sync %s, last seen %v", st.Sync, st.LastSeen)
	}

	// a heartbeats again: it comes back at once (the controller checks when
	// it hears a silent node), once.
	back := t0.Add(24*time.Hour + time.Minute)
	heartbeatUntilSeen(t, ctl, clk, a, back)
	want = append(want, "node.came-back a")
	wantLiveness(t, store, want)
	for _, d := range []time.Duration{time.Second, 10 * time.Second} {
		checkAt(t, ctl, clk, back.Add(d))
		if err := a.Heartbeat(back.Add(d), ""); err != nil {
			t.Fatal(err)
		}
	}
	wantLiveness(t, store, want)
	if st := status(t, ctl, "a"); st.Sync == api.SyncUnreachable {
		t.Fatalf("a back: sync %s", st.Sync)
	}
}

func rawConn(t *testing.T, srv *bus.Server, node string) *nats.Conn {
	t.Helper()
	c := natstest.Creds(t, srv, node)
	nc, err := nats.Connect(srv.URL(), nats.UserJWTAndSeed(c.JWT, c.Seed), nats.CustomInboxPrefix(bus.NodeInbox(node)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// heartbeatUntilSeen sets the clock to at and has n heartbeat until the
// controller shows it seen at at.
func heartbeatUntilSeen(t *testing.T, ctl *controller.Controller, clk *testClock, n *bus.Node, at time.Time) {
	t.Helper()
	clk.Set(at)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := n.Heartbeat(at, ""); err != nil {
			t.Fatal(err)
		}
		if st := status(t, ctl, n.Name()); st.LastSeen != nil && st.LastSeen.Equal(at) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's heartbeat not heard within 10s", n.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkAt(t *testing.T, ctl *controller.Controller, clk *testClock, at time.Time) {
	t.Helper()
	clk.Set(at)
	if _, err := ctl.CheckLiveness(context.Background()); err != nil {
		t.Fatalf("check at %s: %v", at, err)
	}
}

func status(t *testing.T, ctl *controller.Controller, node string) api.NodeStatus {
	t.Helper()
	resp, err := ctl.Status(context.Background(), api.StatusRequest{Nodes: []string{node}})
	if err != nil || len(resp.Nodes) != 1 {
		t.Fatalf("status %s: %v, %v", node, resp, err)
	}
	return resp.Nodes[0]
}

// wantLiveness waits until the store holds exactly want, "type node" of
// each liveness event in order.
func wantLiveness(t *testing.T, store events.Store, want []string) {
	t.Helper()
	reg := events.NewRegistry()
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs, err := store.ReadAll(context.Background(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			p, err := reg.Decode(ev)
			if err != nil {
				t.Fatal(err)
			}
			switch v := p.(type) {
			case events.NodeWentSilent:
				got = append(got, ev.Type+" "+v.Node)
			case events.NodeCameBack:
				got = append(got, ev.Type+" "+v.Node)
			}
		}
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("liveness events %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
