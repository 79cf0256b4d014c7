package agent_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/events"
)

// TestOutboxDeliveredStayDeliveredAcrossRestart: what Flush delivered is
// not pending after a restart, on disk and in memory alike. Three reports
// are kept; a round delivers the first two and fails on the third; the
// outbox is reopened (as a restarted agent opens it): only the third is
// pending, and a flush then delivers it alone, once. It fails if Flush
// does not note an ack, or if reading the log back passes over the acks
// (issue 33, section 8: both bugs made delivered reports pending again
// after a restart, and no test reopened after a delivery).
func TestOutboxDeliveredStayDeliveredAcrossRestart(t *testing.T) {
	opens := map[string]func(t *testing.T) (*agent.Outbox, func() *agent.Outbox){
		"directory": func(t *testing.T) (*agent.Outbox, func() *agent.Outbox) {
			dir := t.TempDir()
			open := func() *agent.Outbox {
				o, err := agent.OpenOutbox(dir)
				if err != nil {
					t.Fatalf("open outbox: %v", err)
				}
				return o
			}
			return open(), open
		},
		"memory": func(t *testing.T) (*agent.Outbox, func() *agent.Outbox) {
			o := agent.NewMemOutbox()
			return o, func() *agent.Outbox {
				r, err := o.Reopen()
				if err != nil {
					t.Fatalf("reopen: %v", err)
				}
				return r
			}
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			box, reopen := open(t)
			var ids []string
			for _, d := range []string{"novox/1", "novox/2", "novox/3"} {
				id := uuid.Must(uuid.NewV7()).String()
				ids = append(ids, id)
				if err := box.Put(agent.Report{Outcome: events.ApplyReported{Node: "novox", Declaration: d, ApplyID: id}}); err != nil {
					t.Fatalf("put %s: %v", d, err)
				}
			}
			down := errors.New("nats: connection closed")
			var delivered []string
			deliver := func(_ context.Context, r agent.Report) error {
				if r.Outcome.ApplyID == ids[2] {
					return down
				}
				delivered = append(delivered, r.Outcome.ApplyID)
				return nil
			}
			if n, err := box.Flush(context.Background(), deliver); n != 2 || !errors.Is(err, agent.ErrUndelivered) {
				t.Fatalf("flush: %d delivered, %v; want 2 and the third undelivered", n, err)
			}

			again := reopen()
			pending, err := again.Pending()
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, r := range pending {
				left = append(left, r.Outcome.ApplyID)
			}
			if !slices.Equal(left, ids[2:]) {
				t.Fatalf("pending after a restart: %v; want only the undelivered %v (delivered: %v)", left, ids[2:], ids[:2])
			}
			if pending[0].Attempts != 1 {
				t.Errorf("the undelivered report's attempts after a restart: %d, want 1", pending[0].Attempts)
			}

			delivered = nil
			ok := func(_ context.Context, r agent.Report) error {
				delivered = append(delivered, r.Outcome.ApplyID)
				return nil
			}
			if n, err := again.Flush(context.Background(), ok); n != 1 || err != nil || !slices.Equal(delivered, ids[2:]) {
				t.Fatalf("flush after the restart: %d, %v, delivered %v; want the third alone", n, err, delivered)
			}
			last := reopen()
			if p, err := last.Pending(); err != nil || len(p) != 0 {
				t.Fatalf("pending after delivering everything and a restart: %d, %v; want none", len(p), err)
			}
		})
	}
}
