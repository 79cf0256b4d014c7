package bus_test

import (
	"strings"
	"testing"
	"time"

	"meshplane/bus"
	"meshplane/bus/natstest"
)

type heard struct {
	node string
	hb   bus.Heartbeat
}

// TestHeartbeats: on the real server, a node's heartbeat reaches the
// controller under its node; a node cannot publish on another node's
// heartbeat subject (a permissions violation, nothing heard), and a
// heartbeat on its own subject claiming another node is ignored and
// counted.
func TestHeartbeats(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	got := make(chan heard, 16)
	sub, err := ctl.SubscribeHeartbeats(func(node string, hb bus.Heartbeat) { got <- heard{node, hb} })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	n := natstest.Node(t, s, "a")
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	if err := n.Heartbeat(at, "v1"); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		if h.node != "a" || h.hb.Node != "a" || !h.hb.At.Equal(at) || h.hb.Version != "v1" {
			t.Fatalf("heard %+v", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no heartbeat heard within 5s")
	}

	nc, errs := rawNode(t, s, "a")
	if err := nc.Publish(bus.HeartbeatSubject("b"), []byte(`{"node":"b","at":"2026-12-02T10:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	violation(t, errs, bus.HeartbeatSubject("b"))
	bodies := []string{`{"node":"b","at":"2026-12-02T10:00:00Z"}`, `not json`,
		// Issue 31: a node's strings are bounded, its keys given once.
		`{"node":"a","at":"2026-12-02T10:00:00Z","version":"` + strings.Repeat("v", bus.MaxVersionLen+1) + `"}`,
		`{"node":"a","at":"2026-12-02T10:00:00Z","version":"\u001b[2J"}`,
		`{"node":"b","node":"a","at":"2026-12-02T10:00:00Z"}`,
	}
	for _, body := range bodies {
		if err := nc.Publish(bus.HeartbeatSubject("a"), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for sub.Stats().Ignored < uint64(len(bodies)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := sub.Stats(); st.Ignored != uint64(len(bodies)) || st.Heard != 1 {
		t.Fatalf("stats %+v, want 1 heard and %d ignored", st, len(bodies))
	}
	select {
	case h := <-got:
		t.Fatalf("heard %+v: want nothing beyond a's own", h)
	default:
	}
}
