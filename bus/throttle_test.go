package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/events"
)

// TestReportsRateLimited: a node that sends faster than its limit has every
// report recorded all the same, in order, the ones over the limit deferred
// on the bus (counted, and told once per window); another node's report is
// recorded meanwhile, not behind the flood; nothing is left on the bus.
func TestReportsRateLimited(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	rec := newRecorder()
	rec.arrived = make(chan bus.Report, 200)
	var mu sync.Mutex
	var told []bus.Throttled
	k := consume(t, ctl, rec,
		bus.WithRateLimit(bus.RateLimit{Rate: 40, Burst: 5, Every: 100 * time.Millisecond}),
		bus.WithThrottled(func(_ context.Context, th bus.Throttled) { mu.Lock(); told = append(told, th); mu.Unlock() }))
	flood, calm := natstest.Node(t, s, "n1"), natstest.Node(t, s, "n2")

	const n = 40
	var sent []string
	for i := range n {
		r := report("n1", "n1/1")
		r.Attempts = 0
		if i == n/2 {
			if _, err := calm.PublishReport(ctxT(t), report("n2", "n2/1")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := flood.PublishReport(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, r.ApplyID.String())
	}
	var got []string
	var calmAt, floodDone int
	for len(got) < n || calmAt == 0 {
		r := rec.wait(t)
		if r.Node == "n2" {
			calmAt = len(got) + 1
			continue
		}
		got = append(got, r.ApplyID.String())
	}
	floodDone = len(got)
	if strings.Join(got, ",") != strings.Join(sent, ",") {
		t.Fatalf("n1's reports recorded out of order or not all:\n got %v\nwant %v", got, sent)
	}
	if calmAt >= floodDone {
		t.Errorf("n2's report was recorded after all %d of n1's: behind the flood", floodDone)
	}
	st, ok := settle(k, func(st bus.ConsumerStats) bool { return st.Recorded == n+1 })
	if !ok || st.Deferred < n-5-10 || st.Refused != 0 || st.Rejected != 0 {
		t.Fatalf("stats %+v: want %d recorded, most of n1's deferred first", st, n+1)
	}
	noneOutstanding(t, ctl)
	var deferred uint64
	eventually := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		deferred = 0
		for _, th := range told {
			if th.Node != "n1" || th.Rate != 40 || th.Burst != 5 || th.From.After(th.To) {
				t.Fatalf("told %+v", th)
			}
			deferred += th.Deferred
		}
		mu.Unlock()
		if deferred == st.Deferred || time.Now().After(eventually) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if deferred != st.Deferred {
		t.Fatalf("told of %d deferred, the consumer counted %d", deferred, st.Deferred)
	}
}

// TestReportsStreamLimits: the stream holds at most 64 reports of one node
// (its agent keeps the rest) and no message over twice MaxReportSize; the
// other nodes' reports still go in.
func TestReportsStreamLimits(t *testing.T) {
	s := natstest.Start(t)
	natstest.Controller(t, s) // makes the stream; nothing consumes it
	n1, n2 := natstest.Node(t, s, "n1"), natstest.Node(t, s, "n2")
	for i := range 64 {
		if _, err := n1.PublishReport(ctxT(t), report("n1", "n1/1")); err != nil {
			t.Fatalf("report %d: %v", i+1, err)
		}
	}
	if _, err := n1.PublishReport(ctxT(t), report("n1", "n1/1")); err == nil {
		t.Fatal("the stream took a 65th report of n1")
	}
	if _, err := n2.PublishReport(ctxT(t), report("n2", "n2/1")); err != nil {
		t.Fatalf("n2's report after n1 filled its share: %v", err)
	}
	big := report("n2", "n2/1")
	big.Outcome.Created = []string{strings.Repeat("x", 2*bus.MaxReportSize)}
	big.Outcome.Applied = 3
	if _, err := n2.PublishReport(ctxT(t), big); err == nil {
		t.Fatal("the stream took a report over twice MaxReportSize")
	}
}

// TestReportsStreamLimitKeepsBacklog: a stream made before the per-node
// limit, holding more of one node than the limit, keeps them all when the
// controller brings its settings up to date (a stream lowering its
// per-subject limit deletes the oldest); each is consumed.
func TestReportsStreamLimitKeepsBacklog(t *testing.T) {
	s := natstest.Start(t)
	cfg, err := s.Controller(nil)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(cfg.User.JWT, cfg.User.Seed))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctxT(t), jetstream.StreamConfig{ // as it was made before
		Name: bus.ReportsStream, Subjects: []string{bus.ReportSubjectPrefix + ">"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Discard: jetstream.DiscardNew,
		MaxBytes: 1 << 30, Duplicates: time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	const backlog = 70
	for range backlog {
		b, err := bus.EncodeReport(report("n1", "n1/1"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctxT(t), bus.ReportSubject("n1"), b); err != nil {
			t.Fatal(err)
		}
	}
	ctl := natstest.Controller(t, s)
	st, err := js.Stream(ctxT(t), bus.ReportsStream)
	if err != nil {
		t.Fatal(err)
	}
	info := st.CachedInfo()
	if info.State.Msgs != backlog || info.Config.MaxMsgsPerSubject != backlog || !info.Config.DiscardNewPerSubject {
		t.Fatalf("after the update: %d reports, %d a node at most (discard new %v); want all %d kept",
			info.State.Msgs, info.Config.MaxMsgsPerSubject, info.Config.DiscardNewPerSubject, backlog)
	}
	rec := newRecorder()
	rec.arrived = make(chan bus.Report, backlog)
	consume(t, ctl, rec, bus.WithRateLimit(bus.RateLimit{Rate: 1000, Burst: 100}))
	for range backlog {
		rec.wait(t)
	}
	noneOutstanding(t, ctl)
}

// TestReportRejectedNamesItsReason: a report the handler rejects with a
// reason is terminated, once, and ReasonOf finds the reason.
func TestReportRejectedNamesItsReason(t *testing.T) {
	err := bus.RejectFor(events.RefusedCounts, errors.New("unchanged: -1"))
	if !errors.Is(err, bus.ErrRejected) || bus.ReasonOf(err) != events.RefusedCounts || !strings.Contains(err.Error(), "unchanged: -1") {
		t.Fatalf("RejectFor: %v (reason %q)", err, bus.ReasonOf(err))
	}
	if bus.ReasonOf(bus.Reject(errors.New("x"))) != "" {
		t.Fatal("a reason where none was given")
	}
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	var mu sync.Mutex
	calls := 0
	k, err := ctl.ConsumeReports(context.Background(), func(context.Context, bus.Report) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return bus.RejectFor(events.RefusedCounts, errors.New("unchanged: -1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop(context.Background())
	n := natstest.Node(t, s, "n1")
	if _, err := n.PublishReport(ctxT(t), report("n1", "n1/1")); err != nil {
		t.Fatal(err)
	}
	if st, ok := settle(k, func(st bus.ConsumerStats) bool { return st.Rejected == 1 }); !ok {
		t.Fatalf("stats %+v", st)
	}
	noneOutstanding(t, ctl)
	time.Sleep(1500 * time.Millisecond) // past a redelivery's first delay
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("handled %d times, want once", calls)
	}
}
