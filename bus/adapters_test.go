package bus_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/events"
)

// AgentLink is what a running agent needs of its transport; checked here
// so that package bus does not link the agent.
var (
	_ agent.Source       = bus.AgentLink{}
	_ agent.Reporter     = bus.AgentLink{}
	_ agent.DryRunServer = bus.AgentLink{}
	_ agent.RosterSource = bus.AgentLink{}
	_ agent.LogServer    = bus.AgentLink{}
)

func agentReport(node, decl string, attempts int) agent.Report {
	id := uuid.Must(uuid.NewV7())
	return agent.Report{
		Outcome: events.ApplyReported{
			Node: node, Declaration: decl, Digest: "sha256:d", Sent: 2, Applied: 1, Created: []string{"web"},
			Held: []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found"}}, ApplyID: id.String(),
		},
		AppliedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Correlation: "corr-" + decl,
		Attempts: attempts, HeldSince: "0190aaaa-0000-7000-8000-000000000001", SameDeclaration: true,
	}
}

// TestAgentLink runs agent.Source and agent.Reporter over the real bus.
func TestAgentLink(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	link := natstest.Node(t, s, "n1").Agent()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("declarations", func(t *testing.T) {
		if err := ctl.Publisher().PutDeclaration(ctx, decl("n1", 1)); err != nil {
			t.Fatal(err)
		}
		ch, err := link.Declarations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-ch:
			if d.ID != "n1/1" {
				t.Fatalf("got %s, want n1/1", d.ID)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no declaration within 10s")
		}
	})

	t.Run("a report arrives in its wire form, once", func(t *testing.T) {
		rec := newRecorder()
		consume(t, ctl, rec)
		r := agentReport("n1", "n1/1", 2)
		r.LastError = "no server"
		if dup, err := link.Report(ctx, r); err != nil || dup {
			t.Fatalf("Report: duplicate %v, %v", dup, err)
		}
		if dup, err := link.Report(ctx, r); err != nil || !dup {
			t.Fatalf("Report again: duplicate %v, %v; want a duplicate", dup, err)
		}
		got := rec.wait(t)
		rec.none(t, 300*time.Millisecond)
		want := r.Wire()
		switch {
		case got.ApplyID.String() != r.Outcome.ApplyID, got.Attempts != 2, got.LastError != "no server",
			!got.AppliedAt.Equal(r.AppliedAt), got.Correlation != r.Correlation:
			t.Errorf("report %+v; want apply %s, 2 attempts, its last error, time and correlation", got, r.Outcome.ApplyID)
		case got.Outcome.Digest != "" || got.Outcome.Held != nil || got.Outcome.HeldSince != want.HeldSince:
			t.Errorf("outcome %+v; want the compact form %+v", got.Outcome, want)
		}
	})

	t.Run("refused before sending", func(t *testing.T) {
		other := agentReport("n2", "n2/1", 0)
		bad := agentReport("n1", "n1/1", 0)
		bad.Outcome.ApplyID = "not-a-uuid"
		for name, r := range map[string]agent.Report{"another node's": other, "no apply id": bad} {
			if _, err := link.Report(ctx, r); !errors.Is(err, bus.ErrBadReport) {
				t.Errorf("%s report: %v, want ErrBadReport", name, err)
			}
		}
	})
}

// TestAgentLinkDoesNotBuffer: a report sent while the bus is away fails,
// and is not sent on reconnection behind the agent's back (the agent
// sends it again itself, counted late).
func TestAgentLinkDoesNotBuffer(t *testing.T) {
	cfg := bus.ServerConfig{Dir: t.TempDir(), Listen: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	s1, err := bus.StartServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Controller(t, s1) // makes the stream
	link := natstest.Node(t, s1, "n1").Agent()
	natstest.Stop(t, s1)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := agentReport("n1", "n1/1", 0)
	// At once once the client knows the bus is gone; until then the
	// publish waits for an acknowledgement that never comes.
	try, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if _, err := link.Report(try, r); err == nil {
		t.Fatal("a report was taken with the bus down")
	}
	s2, err := bus.StartServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { natstest.Stop(t, s2) })
	rec := newRecorder()
	consume(t, natstest.Controller(t, s2), rec)
	// Once the node is back, a new report goes through; a buffered one would
	// have gone first, on reconnection.
	r2 := agentReport("n1", "n1/2", 0)
	for {
		if _, err := link.Report(ctx, r2); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the node did not publish after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := rec.wait(t); got.ApplyID.String() != r2.Outcome.ApplyID {
		t.Fatalf("recorded %s first, want %s (the one sent while the bus was down was buffered)", got.ApplyID, r2.Outcome.ApplyID)
	}
	rec.none(t, 300*time.Millisecond)
}
