package controllerd

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus/natstest"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events/memstore"
)

// logRuntime is the simulated runtime with a log for container web: a
// line a second from t0, three of them; a follow past them waits.
type logRuntime struct {
	*simruntime.Runtime
	mu    sync.Mutex
	asked []agent.LogQuery
}

var logT0 = time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)

func (r *logRuntime) ReadLogs(ctx context.Context, name string, q agent.LogQuery) (agent.LogChunk, error) {
	r.mu.Lock()
	r.asked = append(r.asked, q)
	r.mu.Unlock()
	if name != "web" {
		return agent.LogChunk{}, fmt.Errorf("managed container %s: %w", name, agent.ErrNotFound)
	}
	if q.Since.IsZero() {
		return agent.LogChunk{Data: []byte("line 0\n"), Cursor: logT0}, nil
	}
	next := int(q.Since.Sub(logT0)/time.Second) + 1
	if next < 3 {
		return agent.LogChunk{Data: []byte(fmt.Sprintf("line %d\n", next)), Cursor: logT0.Add(time.Duration(next) * time.Second)}, nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(q.WaitMillis) * time.Millisecond):
	}
	return agent.LogChunk{Cursor: q.Since}, nil
}

// TestLogsThroughTheDaemon: mesh logs' whole way on a real bus: the API
// client, the controller, the daemon's publisher (before the bus is up,
// and once it is), the bus, the running agent's log answers, its runtime.
func TestLogsThroughTheDaemon(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)
	srv := natstest.Start(t)
	bc := natstest.Controller(t, srv)
	pub := &laterPublisher{}
	ctl, err := controller.New(controller.Config{Store: memstore.New(), Publisher: pub, Interval: time.Hour, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- ctl.Run(runCtx) }()
	t.Cleanup(func() { stopRun(); <-done })
	if _, err := ctl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "ana", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(httpapi.Handler(ctl, secretToken))
	t.Cleanup(hs.Close)
	client, err := httpapi.NewClient(hs.URL, secretToken)
	if err != nil {
		t.Fatal(err)
	}
	tail := api.LogsRequest{Node: "a", Container: "web", Tail: 10}
	if err := client.Logs(ctx, tail, func(api.LogChunk) error { return nil }); err == nil || !strings.Contains(err.Error(), errBusNotUp.Error()) {
		t.Fatalf("before the bus is up: %v", err)
	}
	pub.set(notifyingPublisher{Publisher: bc.Publisher(), pushed: func(declaration.Declaration) {}})
	if err := client.Logs(ctx, tail, func(api.LogChunk) error { return nil }); err == nil || !strings.Contains(err.Error(), "no agent") {
		t.Fatalf("no agent of a: %v", err)
	}

	rt := &logRuntime{Runtime: simruntime.New()}
	link := natstest.Node(t, srv, "a").Agent()
	agentDone := make(chan error, 1)
	go func() {
		agentDone <- agent.Run(runCtx, agent.RunConfig{
			Node: "a", Runtime: rt, Outbox: agent.NewMemOutbox(), Source: link, Reporter: link, DryRuns: link,
			Interval: time.Hour, Logger: log,
		})
	}()
	t.Cleanup(func() { stopRun(); <-agentDone })

	var got strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for { // until the agent has subscribed
		got.Reset()
		err = client.Logs(ctx, tail, func(ch api.LogChunk) error { got.Write(ch.Data); return nil })
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || got.String() != "line 0\n" {
		t.Fatalf("tail: %q, %v", got.String(), err)
	}
	if err := client.Logs(ctx, api.LogsRequest{Node: "a", Container: "db"}, func(api.LogChunk) error { return nil }); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a container of no one's: %v", err)
	}

	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got.Reset()
	err = client.Logs(fctx, api.LogsRequest{Node: "a", Container: "web", Follow: true}, func(ch api.LogChunk) error {
		got.Write(ch.Data)
		if strings.Count(got.String(), "\n") == 3 {
			cancel() // Ctrl-C
		}
		return nil
	})
	if err != nil || got.String() != "line 0\nline 1\nline 2\n" {
		t.Fatalf("follow: %q, %v", got.String(), err)
	}
}
