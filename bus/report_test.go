package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/events"
)

func report(node, decl string) bus.Report {
	id := uuid.Must(uuid.NewV7())
	return bus.Report{
		Node: node, ApplyID: id, AppliedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
		Correlation: "corr", Attempts: 2, LastError: "bus down",
		Outcome: events.ApplyReported{Node: node, Declaration: decl, Sent: 3, Applied: 3, Created: []string{"a"}, Unchanged: 2, ApplyID: id.String()},
	}
}

// recorder is a report handler that records what it is given, and fails or
// rejects as told.
type recorder struct {
	mu      sync.Mutex
	got     []bus.Report
	calls   map[uuid.UUID]int
	fail    map[uuid.UUID]int // fail this many times first
	reject  map[uuid.UUID]bool
	arrived chan bus.Report
}

func newRecorder() *recorder {
	return &recorder{calls: map[uuid.UUID]int{}, fail: map[uuid.UUID]int{}, reject: map[uuid.UUID]bool{}, arrived: make(chan bus.Report, 100)}
}

func (r *recorder) handle(_ context.Context, rep bus.Report) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[rep.ApplyID]++
	if r.reject[rep.ApplyID] {
		return bus.Reject(errors.New("node unknown"))
	}
	if r.calls[rep.ApplyID] <= r.fail[rep.ApplyID] {
		return errors.New("store unreachable")
	}
	r.got = append(r.got, rep)
	r.arrived <- rep
	return nil
}

func (r *recorder) wait(t *testing.T) bus.Report {
	t.Helper()
	select {
	case rep := <-r.arrived:
		return rep
	case <-time.After(15 * time.Second):
		t.Fatal("no report recorded within 15s")
	}
	return bus.Report{}
}

// settle waits up to 5s for the consumer's counters to satisfy ok. The
// consumer counts a report after its handler returns, so a test that has
// just seen the handler record it may read the counter a moment early.
func settle(k *bus.Consumer, ok func(bus.ConsumerStats) bool) (bus.ConsumerStats, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := k.Stats()
		if ok(st) || time.Now().After(deadline) {
			return st, ok(st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case rep := <-r.arrived:
		t.Fatalf("unexpected report %s from %s", rep.ApplyID, rep.Node)
	case <-time.After(d):
	}
}

func consume(t *testing.T, ctl *bus.Controller, r *recorder) *bus.Consumer {
	t.Helper()
	k, err := ctl.ConsumeReports(context.Background(), r.handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := k.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return k
}

func TestReports(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	rec := newRecorder()
	k := consume(t, ctl, rec)
	n := natstest.Node(t, s, "web.a")

	t.Run("published, consumed whole, acknowledged once", func(t *testing.T) {
		want := report("web.a", "web.a/1")
		if dup, err := n.PublishReport(ctxT(t), want); err != nil || dup {
			t.Fatalf("publish: duplicate %v, %v", dup, err)
		}
		got := rec.wait(t)
		if fmt.Sprint(got) != fmt.Sprint(func() bus.Report { w := want; w.Version = 1; return w }()) {
			t.Fatalf("recorded %+v\nwant %+v", got, want)
		}
		rec.none(t, 300*time.Millisecond)
	})

	t.Run("a re-sent report is deduplicated by its apply id", func(t *testing.T) {
		r := report("web.a", "web.a/2")
		if _, err := n.PublishReport(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
		r.Attempts++ // a re-send after a lost acknowledgement
		if dup, err := n.PublishReport(ctxT(t), r); err != nil || !dup {
			t.Fatalf("re-send: duplicate %v, %v; want a duplicate", dup, err)
		}
		if got := rec.wait(t); got.ApplyID != r.ApplyID {
			t.Fatalf("recorded %s, want %s", got.ApplyID, r.ApplyID)
		}
		rec.none(t, 300*time.Millisecond)
	})

	t.Run("a handler error redelivers until recorded", func(t *testing.T) {
		r := report("web.a", "web.a/3")
		rec.mu.Lock()
		rec.fail[r.ApplyID] = 1
		rec.mu.Unlock()
		before := k.Stats()
		if _, err := n.PublishReport(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
		if got := rec.wait(t); got.ApplyID != r.ApplyID {
			t.Fatalf("recorded %s, want %s", got.ApplyID, r.ApplyID)
		}
		if st, ok := settle(k, func(st bus.ConsumerStats) bool {
			return st.Retried == before.Retried+1 && st.Recorded == before.Recorded+1
		}); !ok {
			t.Fatalf("stats %+v after %+v: want one retry, one recorded", st, before)
		}
	})

	t.Run("a rejected report is terminated and counted", func(t *testing.T) {
		bad, good := report("web.a", "web.a/4"), report("web.a", "web.a/5")
		rec.mu.Lock()
		rec.reject[bad.ApplyID] = true
		rec.mu.Unlock()
		before := k.Stats()
		for _, r := range []bus.Report{bad, good} {
			if _, err := n.PublishReport(ctxT(t), r); err != nil {
				t.Fatal(err)
			}
		}
		if got := rec.wait(t); got.ApplyID != good.ApplyID {
			t.Fatalf("recorded %s, want %s", got.ApplyID, good.ApplyID)
		}
		rec.none(t, 1500*time.Millisecond) // past a redelivery's first delay
		rec.mu.Lock()
		calls := rec.calls[bad.ApplyID]
		rec.mu.Unlock()
		if st := k.Stats(); st.Rejected != before.Rejected+1 || calls != 1 {
			t.Fatalf("stats %+v after %+v, rejected report handled %d times: want one rejection, handled once", st, before, calls)
		}
	})

	t.Run("a node cannot send another node's report", func(t *testing.T) {
		if _, err := n.PublishReport(ctxT(t), report("web.b", "web.b/1")); !errors.Is(err, bus.ErrBadReport) {
			t.Fatalf("publish another node's report: %v, want ErrBadReport", err)
		}
	})
}

// TestReportsRefused publishes, with the controller's full rights, what no
// node could: garbage and mismatched reports on report subjects. Each is
// refused and counted, and good reports still flow around them.
func TestReportsRefused(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	rec := newRecorder()
	k := consume(t, ctl, rec)
	cfg, err := s.Controller(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(cfg.User.JWT, cfg.User.Seed))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	n := natstest.Node(t, s, "n1")

	enc := func(r bus.Report) []byte { // as is: no check
		r.Version = 1
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	other := report("n2", "n2/1")
	lying := report("n1", "n1/1")
	lying.Outcome.Node = "n2"
	for _, tc := range []struct {
		name, subject string
		data          []byte
	}{
		{"garbage", bus.ReportSubject("n1"), []byte("\x00not json")},
		{"empty", bus.ReportSubject("n1"), nil},
		{"another node's report on n1's subject", bus.ReportSubject("n1"), enc(other)},
		{"an outcome for another node", bus.ReportSubject("n1"), enc(lying)},
		{"no apply id", bus.ReportSubject("n1"), []byte(`{"version":1,"node":"n1","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1"}}`)},
		{"an unknown version", bus.ReportSubject("n1"), []byte(`{"version":99,"node":"n1"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := k.Refused()
			good := report("n1", "n1/2")
			if _, err := raw.Request(tc.subject, tc.data, 5*time.Second); err != nil { // the stream's ack
				t.Fatal(err)
			}
			if _, err := n.PublishReport(ctxT(t), good); err != nil {
				t.Fatal(err)
			}
			if got := rec.wait(t); got.ApplyID != good.ApplyID {
				t.Fatalf("recorded %s, want the good report %s", got.ApplyID, good.ApplyID)
			}
			if got := k.Refused(); got != before+1 {
				t.Fatalf("refused %d, want %d", got, before+1)
			}
		})
	}
	if st, ok := settle(k, func(st bus.ConsumerStats) bool { return st.Recorded == 6 && st.Refused == 6 }); !ok {
		t.Fatalf("stats %+v: want 6 recorded and 6 refused", st)
	}
}

// TestReportOutlivesController: a report the controller failed to record,
// and a controller stopped before recording, leave the report to the next
// controller on the same durable consumer.
func TestReportOutlivesController(t *testing.T) {
	s := natstest.Start(t)
	n := natstest.Node(t, s, "n1")
	first := newRecorder()
	r := report("n1", "n1/1")
	first.fail[r.ApplyID] = 1 << 30 // never records it
	ctl1 := natstest.Controller(t, s)
	k1, err := ctl1.ConsumeReports(context.Background(), first.handle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.PublishReport(ctxT(t), r); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for k1.Stats().Retried == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first controller never tried the report")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := k1.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ctl1.Close()

	second := newRecorder()
	consume(t, natstest.Controller(t, s), second)
	if got := second.wait(t); got.ApplyID != r.ApplyID {
		t.Fatalf("the next controller recorded %s, want %s", got.ApplyID, r.ApplyID)
	}
}
