package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/bus"
	"meshplane/bus/natstest"
)

// TestLogs: the controller's log request reaches the node's agent on the
// real server and comes back with its chunk; the agent's failure comes
// back as its error; a node with no agent is ErrNoAgent at once.
func TestLogs(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	at := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	n := natstest.Node(t, s, "a")
	stop, err := n.ServeLogs(ctx, func(_ context.Context, req agent.LogRequest) (agent.LogChunk, error) {
		if req.Container == "gone" {
			return agent.LogChunk{}, agent.ErrNotFound
		}
		return agent.LogChunk{Data: []byte(req.Container + ": tail " + string(rune('0'+req.Tail)) + "\n\x1b[31m"), Cursor: at}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tests := []struct {
		name, node, container string
		want                  string // the error names this; "" for an answer
	}{
		{"answered", "a", "web", ""},
		{"the agent could not read it", "a", "gone", "not found"},
		{"no agent of b", "b", "web", "no agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := ctl.Logs(ctx, tt.node, agent.LogRequest{Container: tt.container, LogQuery: agent.LogQuery{Tail: 5}})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Logs = %+v, %v; want an error naming %q", ch, err, tt.want)
				}
				return
			}
			if err != nil || string(ch.Data) != "web: tail 5\n\x1b[31m" || !ch.Cursor.Equal(at) {
				t.Fatalf("Logs = %q %v, %v", ch.Data, ch.Cursor, err)
			}
		})
	}
	if _, err := ctl.Logs(ctx, "b", agent.LogRequest{Container: "web"}); !errors.Is(err, bus.ErrNoAgent) {
		t.Fatalf("no agent: %v, want ErrNoAgent", err)
	}
}

// TestLogsPermissions holds NodePermissions for log requests on the real
// server: node a takes its own log requests and answers each once; it can
// neither hear b's, nor ask b's agent, nor publish an answer to a request
// it did not receive.
func TestLogsPermissions(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	nc, errs := rawNode(t, s, "a")
	own, err := nc.SubscribeSync(bus.LogsSubject("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ctl.Logs(ctx, "a", agent.LogRequest{Container: "web"})
		done <- err
	}()
	m, err := own.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("a's own log request: %v", err)
	}
	if err := m.Respond([]byte(`{"version":1,"chunk":{"data":"b2sK"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a's answer: %v", err)
	}
	select {
	case err := <-errs:
		t.Fatalf("a violated its permissions taking its own request: %v", err)
	default:
	}

	t.Run("a second answer to the same request", func(t *testing.T) {
		if err := m.Respond([]byte(`{"version":1}`)); err != nil {
			t.Fatal(err)
		}
		violation(t, errs, m.Reply)
	})
	for _, subj := range []string{bus.LogsSubject("b"), bus.LogsSubject("a.b")} {
		t.Run("cannot ask "+subj, func(t *testing.T) {
			if err := nc.Publish(subj, []byte(`{"container":"web"}`)); err != nil {
				t.Fatal(err)
			}
			violation(t, errs, subj)
		})
	}
	t.Run("cannot answer what it did not receive", func(t *testing.T) {
		subj := "_INBOX.controller.forged"
		if err := nc.Publish(subj, []byte(`{"version":1}`)); err != nil {
			t.Fatal(err)
		}
		violation(t, errs, subj)
	})
	for _, subj := range []string{bus.LogsSubject("b"), bus.LogsSubject("a.b"), "mesh.logs.>", "mesh.logs.*"} {
		t.Run("cannot subscribe "+subj, func(t *testing.T) {
			if _, err := nc.SubscribeSync(subj); err != nil {
				t.Fatal(err)
			}
			violation(t, errs, subj)
		})
	}
}
