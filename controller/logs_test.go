package controller_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events/memstore"
)

// logBus is a Publisher that answers log requests from a script of
// chunks, recording what it was asked.
type logBus struct {
	*bus
	mu     sync.Mutex
	asked  []agent.LogRequest
	answer func(n int, req agent.LogRequest) (agent.LogChunk, error)
}

func (b *logBus) Logs(_ context.Context, node string, req agent.LogRequest) (agent.LogChunk, error) {
	b.mu.Lock()
	n := len(b.asked)
	b.asked = append(b.asked, req)
	b.mu.Unlock()
	return b.answer(n, req)
}

func logsController(t *testing.T, pub controller.Publisher) (*controller.Controller, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := controller.New(controller.Config{Store: memstore.New(), Publisher: pub, Ticks: make(chan time.Time)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"novox"}}); err != nil {
		t.Fatal(err)
	}
	return c, ctx
}

// TestLogs: the tail is one ask; a follow asks again from each chunk's
// cursor, waiting at the agent, and at once after a cut chunk; an unknown
// node, a bad request, an agent's failure and a controller with no bus
// are refused, each saying why.
func TestLogs(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	script := func(n int, req agent.LogRequest) (agent.LogChunk, error) {
		switch n {
		case 0:
			return agent.LogChunk{Data: []byte("one\n"), Cursor: t0, Cut: true}, nil
		case 1:
			return agent.LogChunk{Data: []byte("two\n"), Cursor: t0.Add(time.Second), Cut: true}, nil
		case 2:
			return agent.LogChunk{Data: []byte("three\n"), Cursor: t0.Add(2 * time.Second)}, nil
		case 3:
			return agent.LogChunk{Cursor: req.Since}, nil // nothing new in the wait
		}
		return agent.LogChunk{}, errors.New("the engine went away")
	}
	t.Run("a tail", func(t *testing.T) {
		lb := &logBus{bus: newBus(), answer: script}
		c, ctx := logsController(t, lb)
		var got []api.LogChunk
		err := c.Logs(ctx, api.LogsRequest{Node: "novox", Container: "web", Tail: 7}, func(ch api.LogChunk) error { got = append(got, ch); return nil })
		if err != nil || len(got) != 1 || string(got[0].Data) != "one\n" || !got[0].Cut {
			t.Fatalf("%+v, %v", got, err)
		}
		if len(lb.asked) != 1 || lb.asked[0] != (agent.LogRequest{Container: "web", LogQuery: agent.LogQuery{Tail: 7}}) {
			t.Errorf("asked %+v", lb.asked)
		}
	})
	t.Run("a follow", func(t *testing.T) {
		lb := &logBus{bus: newBus(), answer: script}
		c, ctx := logsController(t, lb)
		var data strings.Builder
		err := c.Logs(ctx, api.LogsRequest{Node: "novox", Container: "web", Follow: true}, func(ch api.LogChunk) error {
			data.Write(ch.Data)
			if ch.Cut && !strings.HasPrefix(string(ch.Data), "one") {
				t.Errorf("a follow's chunk said cut: %+v", ch)
			}
			return nil
		})
		var rej *commands.Rejection
		if !errors.As(err, &rej) || rej.Code != api.CodeLogsUnreadable || !strings.Contains(rej.Msg, "engine went away") {
			t.Fatalf("err %v, want the agent's failure", err)
		}
		if data.String() != "one\ntwo\nthree\n" {
			t.Errorf("data %q", data.String())
		}
		want := []agent.LogQuery{
			{},
			{Since: t0, WaitMillis: 15000},
			{Since: t0.Add(time.Second)}, // a cut chunk: the rest at once
			{Since: t0.Add(2 * time.Second), WaitMillis: 15000},
			{Since: t0.Add(2 * time.Second), WaitMillis: 15000},
		}
		for i, w := range want {
			if i >= len(lb.asked) || lb.asked[i].LogQuery != w {
				t.Fatalf("ask %d: %+v, want %+v (all %+v)", i, lb.asked, w, lb.asked)
			}
		}
	})
	refusals := []struct {
		name string
		pub  controller.Publisher
		req  api.LogsRequest
		code string
	}{
		{"an unknown node", &logBus{bus: newBus(), answer: script}, api.LogsRequest{Node: "g14", Container: "web"}, "node-unknown"},
		{"a bad container name", &logBus{bus: newBus(), answer: script}, api.LogsRequest{Node: "novox", Container: "../x"}, "invalid"},
		{"a tail too long", &logBus{bus: newBus(), answer: script}, api.LogsRequest{Node: "novox", Container: "web", Tail: api.MaxLogsTail + 1}, "invalid"},
		{"no bus", newBus(), api.LogsRequest{Node: "novox", Container: "web"}, api.CodeUnsupported},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			c, ctx := logsController(t, tt.pub)
			err := c.Logs(ctx, tt.req, func(api.LogChunk) error { t.Error("a chunk"); return nil })
			var rej *commands.Rejection
			if !errors.As(err, &rej) || rej.Code != tt.code {
				t.Fatalf("err %v, want a rejection %s", err, tt.code)
			}
		})
	}
}
