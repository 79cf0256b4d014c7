package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/bus"
	"meshplane/bus/natstest"
)

// TestReportWorkers: with several workers every report is handled once, and
// each node's in the order its agent published them.
func TestReportWorkers(t *testing.T) {
	s := natstest.Start(t)
	cfg, err := s.Controller(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReportWorkers = 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctl, err := bus.DialController(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()

	const nodes, each = 6, 10
	sent := map[string][]uuid.UUID{}
	for i := range nodes {
		node := fmt.Sprintf("n%d", i)
		n := natstest.Node(t, s, node)
		for j := range each {
			r := report(node, fmt.Sprintf("%s/%d", node, j))
			if _, err := n.PublishReport(ctx, r); err != nil {
				t.Fatal(err)
			}
			sent[node] = append(sent[node], r.ApplyID)
		}
	}
	rec := newRecorder()
	rec.arrived = make(chan bus.Report, nodes*each)
	consume(t, ctl, rec)
	got := map[string][]uuid.UUID{}
	for range nodes * each {
		r := rec.wait(t)
		got[r.Node] = append(got[r.Node], r.ApplyID)
	}
	rec.none(t, 200*time.Millisecond)
	for node, want := range sent {
		if fmt.Sprint(got[node]) != fmt.Sprint(want) {
			t.Errorf("%s: handled %v, want %v (publish order, once each)", node, got[node], want)
		}
	}
}
