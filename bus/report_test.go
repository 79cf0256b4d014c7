package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/events"
	"meshplane/wire"
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
	refused []bus.Refused // told by the consumer (WithRefused)
	refuse  int           // fail the refusal callback this many times first
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

func (r *recorder) refusal(_ context.Context, f bus.Refused) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse > 0 {
		r.refuse--
		return errors.New("store unreachable")
	}
	r.refused = append(r.refused, f)
	return nil
}

func (r *recorder) refusals() []bus.Refused {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refused)
}

func (r *recorder) wait(t *testing.T) bus.Report {
	t.Helper()
	select {
	case rep := <-r.arrived:
		return rep
	case <-time.After(45 * time.Second):
		t.Fatal("no report recorded within 45s")
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

func consume(t *testing.T, ctl *bus.Controller, r *recorder, opts ...bus.ConsumeOption) *bus.Consumer {
	t.Helper()
	k, err := ctl.ConsumeReports(context.Background(), r.handle, append([]bus.ConsumeOption{bus.WithRefused(r.refusal)}, opts...)...)
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
		b, err := bus.EncodeReport(want) // the bytes published
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(func() bus.Report {
			w := want
			w.Version, w.Size, w.Digest = 1, len(b), bus.Digest(b)
			return w
		}()) {
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
	big := report("n1", "n1/1")
	big.Outcome.Created = []string{strings.Repeat("x", bus.MaxReportSize)}
	change := events.ContainerChange{Node: "n1", Module: "m", Container: "web", Declaration: "n1/1", State: events.WorkloadCrashLooping,
		At: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), ExitCode: 1, Restarts: 3}
	othersContainer := report("n1", "n1/1")
	oc := change
	oc.Node = "n2"
	othersContainer.Workload = &wire.Workload{Changes: []events.ContainerChange{oc}}
	noState := report("n1", "n1/1")
	ns := change
	ns.State = "fine, really"
	noState.Workload = &wire.Workload{Changes: []events.ContainerChange{ns}}
	for _, tc := range []struct {
		name, subject string
		data          []byte
		reason        string
	}{
		{"garbage", bus.ReportSubject("n1"), []byte("\x00not json"), events.RefusedMalformed},
		{"empty", bus.ReportSubject("n1"), nil, events.RefusedMalformed},
		{"another node's report on n1's subject", bus.ReportSubject("n1"), enc(other), events.RefusedWrongNode},
		{"an outcome for another node", bus.ReportSubject("n1"), enc(lying), events.RefusedWrongNode},
		{"no apply id", bus.ReportSubject("n1"), []byte(`{"version":1,"node":"n1","applied_at":"2026-11-30T09:00:00Z","outcome":{"node":"n1"}}`), events.RefusedMalformed},
		{"an unknown version", bus.ReportSubject("n1"), []byte(`{"version":99,"node":"n1"}`), events.RefusedMalformed},
		{"over MaxReportSize", bus.ReportSubject("n1"), enc(big), events.RefusedTooLarge},
		{"a workload change of another node's container", bus.ReportSubject("n1"), enc(othersContainer), events.RefusedMalformed},
		{"a workload change in no state", bus.ReportSubject("n1"), enc(noState), events.RefusedMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := k.Refused()
			told := len(rec.refusals())
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
			fs := rec.refusals()
			if len(fs) != told+1 {
				t.Fatalf("told of %d refusals, want %d", len(fs), told+1)
			}
			f := fs[len(fs)-1]
			if f.Node != "n1" || f.Reason != tc.reason || f.Size != len(tc.data) || f.Digest != bus.Digest(tc.data) || !errors.Is(f.Err, bus.ErrBadReport) {
				t.Fatalf("told %+v, want n1's, for %s, %d bytes", f, tc.reason, len(tc.data))
			}
		})
	}
	if st, ok := settle(k, func(st bus.ConsumerStats) bool { return st.Recorded == 9 && st.Refused == 9 }); !ok {
		t.Fatalf("stats %+v: want 9 recorded and 9 refused", st)
	}
	noneOutstanding(t, ctl)

	t.Run("a refusal not recorded is redelivered, then recorded", func(t *testing.T) {
		rec.mu.Lock()
		rec.refuse = 1
		rec.mu.Unlock()
		told := len(rec.refusals())
		if _, err := raw.Request(bus.ReportSubject("n1"), []byte("not json again"), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if st, ok := settle(k, func(st bus.ConsumerStats) bool { return st.Refused == 10 && st.Retried == 1 }); !ok {
			t.Fatalf("stats %+v: want it retried once, then refused", st)
		}
		if n := len(rec.refusals()); n != told+1 {
			t.Fatalf("told of %d refusals, want %d", n, told+1)
		}
		noneOutstanding(t, ctl)
	})
}

// noneOutstanding checks that the reports consumer holds nothing: no
// message pending, none waiting for an acknowledgement or a redelivery.
func noneOutstanding(t *testing.T, ctl *bus.Controller) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ci, err := ctl.ConsumerInfo(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if ci.NumPending == 0 && ci.NumAckPending == 0 && ci.NumRedelivered == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer holds %d pending, %d unacknowledged, %d redelivered", ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
		}
		time.Sleep(20 * time.Millisecond)
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

// TestDecodeReportStrict: issue 31, item 2. The bus door decodes as
// strictly as the API and import: a key given twice (the last would win),
// or in another case than its field's, at any depth, is refused as
// malformed; an unknown key is let by (the wire format may gain fields).
func TestDecodeReportStrict(t *testing.T) {
	const head = `{"version":1,"apply_id":"01a22bc2-e0ac-7db6-b30e-93a609b41e53","applied_at":"2026-11-30T09:00:00Z",`
	for _, tc := range []struct {
		name, data string
		ok         bool
	}{
		{"plain", head + `"node":"n1","outcome":{"node":"n1","declaration":"n1/1"}}`, true},
		{"an unknown key", head + `"node":"n1","future":1,"outcome":{"node":"n1","declaration":"n1/1","later":[1]}}`, true},
		{"node twice, the last n1", head + `"node":"n2","node":"n1","outcome":{"node":"n1"}}`, false},
		{"node twice in the outcome", head + `"node":"n1","outcome":{"node":"n2","node":"n1"}}`, false},
		{"sent twice", head + `"node":"n1","outcome":{"node":"n1","sent":5,"sent":0}}`, false},
		{"a key escaped into a twin", head + `"node":"n1","outcome":{"node":"n1","declaration":"a","declar\u0061tion":"b"}}`, false},
		{"Node beside node", head + `"Node":"n2","node":"n1","outcome":{"node":"n1"}}`, false},
		{"a held entry's key twice", head + `"node":"n1","outcome":{"node":"n1","held":[{"name":"a","name":"b"}]}}`, false},
		{"not UTF-8", head + "\"node\":\"n1\",\"outcome\":{\"node\":\"n1\",\"declaration\":\"\xff\"}}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bus.DecodeReport(bus.ReportSubject("n1"), []byte(tc.data))
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, bus.ErrBadReport) || bus.ReasonOf(err) != events.RefusedMalformed {
				t.Fatalf("got %v (reason %q), want refused as malformed", err, bus.ReasonOf(err))
			}
		})
	}
}

// TestReportCarriesWorkload: a report's workload changes travel as they
// are, and a report without any has no "workload" on the wire.
func TestReportCarriesWorkload(t *testing.T) {
	r := report("n1", "n1/1")
	quiet, err := bus.EncodeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(quiet), "workload") {
		t.Fatalf("a quiet report names a workload: %s", quiet)
	}
	c := events.ContainerChange{Node: "n1", Module: "m", Container: "web", Declaration: "n1/1", State: events.WorkloadUnhealthy,
		At: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Health: "unhealthy", Output: "refused\n"}
	r.Workload = &wire.Workload{Changes: []events.ContainerChange{c}}
	b, err := bus.EncodeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := bus.DecodeReport(bus.ReportSubject("n1"), b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Workload == nil || len(back.Workload.Changes) != 1 || back.Workload.Changes[0] != c {
		t.Fatalf("decoded workload %+v, want %+v", back.Workload, c)
	}
}
