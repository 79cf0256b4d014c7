package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
	"meshplane/internal/safego"
)

// TestConsumerCarriesOnAfterAPanic: on the real server, a report whose
// handler panics (as the metrics did on a negative count) is counted under
// bus.report and redelivered, and the consumer goes on: the reports after
// it are recorded, and so is it once the handler stops panicking. With one
// worker (the handler on nats.go's goroutine) and with several.
func TestConsumerCarriesOnAfterAPanic(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			s := natstest.Start(t)
			cfg, err := s.Controller(nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ReportWorkers = workers
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ctl, err := bus.DialController(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ctl.Close()

			n := natstest.Node(t, s, "n1")
			bad := report("n1", "n1/1")
			var sent []uuid.UUID
			for _, r := range []bus.Report{bad, report("n1", "n1/2"), report("n1", "n1/3")} {
				if _, err := n.PublishReport(ctx, r); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, r.ApplyID)
			}

			var mu sync.Mutex
			panicked := 0
			recorded := make(chan uuid.UUID, 10)
			before := safego.Panics()["bus.report"]
			k, err := ctl.ConsumeReports(ctx, func(_ context.Context, r bus.Report) error {
				mu.Lock()
				defer mu.Unlock()
				if r.ApplyID == bad.ApplyID && panicked < 2 {
					panicked++
					panic("counter cannot decrease in value")
				}
				recorded <- r.ApplyID
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := k.Stop(sctx); err != nil {
					t.Error(err)
				}
			}()
			got := map[uuid.UUID]bool{}
			for len(got) < len(sent) {
				select {
				case id := <-recorded:
					if got[id] {
						t.Errorf("%s recorded twice", id)
					}
					got[id] = true
				case <-ctx.Done():
					t.Fatalf("recorded %d of %d reports: the consumer stopped after the panic", len(got), len(sent))
				}
			}
			if d := safego.Panics()["bus.report"] - before; d != 2 {
				t.Errorf("bus.report panics counted %d, want 2", d)
			}
			// The handler hands the report over before the consumer counts
			// it: the count follows the handler's return.
			st := k.Stats()
			for deadline := time.Now().Add(5 * time.Second); st.Recorded < 3 && time.Now().Before(deadline); st = k.Stats() {
				time.Sleep(10 * time.Millisecond)
			}
			if st.Recorded != 3 || st.Retried != 2 || st.Rejected != 0 || st.Refused != 0 {
				t.Errorf("stats %+v, want 3 recorded after 2 retries", st)
			}
		})
	}
}

// TestDryRunPanicIsAnswered: an agent whose dry run panics answers with
// the panic (the controller's mesh plan gets an error at once, not a
// timeout), counts it, and answers the next request.
func TestDryRunPanicIsAnswered(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	n := natstest.Node(t, s, "a")
	stop, err := n.ServeDryRuns(ctx, func(_ context.Context, d declaration.Declaration) (agent.Preview, error) {
		if d.ID == "a/9" {
			panic("plan bug")
		}
		return agent.Preview{Node: "a", Declaration: d.ID}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	before := safego.Panics()["agent.dryrun"]
	_, err = ctl.DryRun(ctx, decl("a", 9))
	if err == nil || !strings.Contains(err.Error(), "agent.dryrun: panic: plan bug") {
		t.Fatalf("DryRun of the panicking one = %v, want the panic", err)
	}
	if pv, err := ctl.DryRun(ctx, decl("a", 1)); err != nil || pv.Declaration != "a/1" {
		t.Fatalf("the next DryRun = %+v, %v", pv, err)
	}
	if d := safego.Panics()["agent.dryrun"] - before; d != 1 {
		t.Errorf("agent.dryrun panics counted %d, want 1", d)
	}
}
