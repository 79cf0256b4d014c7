package bus

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestThrottleAdmit: a node within its burst is admitted at once; beyond it
// each report is deferred to a reservation of its own, in order, and is
// admitted when it comes back then (not before), without taking another
// token; other nodes are untouched; the summary says what was deferred,
// once.
func TestThrottleAdmit(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	th := newThrottle(RateLimit{Rate: 2, Burst: 3})
	sub := ReportSubject("n1")
	for seq := uint64(1); seq <= 3; seq++ {
		if wait, _ := th.admit(sub, seq, now); wait != 0 {
			t.Fatalf("report %d within the burst waits %v", seq, wait)
		}
	}
	var waits []time.Duration
	for seq := uint64(4); seq <= 6; seq++ {
		wait, fresh := th.admit(sub, seq, now)
		if wait <= 0 || !fresh {
			t.Fatalf("report %d beyond the burst: wait %v, fresh %v", seq, wait, fresh)
		}
		waits = append(waits, wait)
	}
	if waits[0] >= waits[1] || waits[1] >= waits[2] {
		t.Fatalf("deferred reports wait %v: want each after the one before", waits)
	}
	if wait, _ := th.admit(ReportSubject("n2"), 7, now); wait != 0 {
		t.Fatalf("another node's report waits %v", wait)
	}
	// Report 4 comes back early: deferred again, not fresh; then on time.
	if wait, fresh := th.admit(sub, 4, now.Add(waits[0]/2)); wait <= 0 || fresh {
		t.Fatalf("report 4 back early: wait %v, fresh %v", wait, fresh)
	}
	if wait, _ := th.admit(sub, 4, now.Add(waits[0])); wait != 0 {
		t.Fatalf("report 4 back on time waits %v", wait)
	}
	if wait, _ := th.admit(sub, 5, now.Add(waits[1])); wait != 0 {
		t.Fatalf("report 5 back on time waits %v", wait)
	}
	// A new report waits behind the ones deferred.
	if wait, _ := th.admit(sub, 8, now.Add(waits[1])); wait <= waits[2]-waits[1] {
		t.Fatalf("a new report waits %v, not behind report 6 (%v)", wait, waits[2]-waits[1])
	}
	got := th.summary(now.Add(time.Minute))
	if len(got) != 1 || got[0].Node != "n1" || got[0].Deferred != 4 || !got[0].From.Equal(now) || got[0].Rate != 2 || got[0].Burst != 3 {
		t.Fatalf("summary %+v, want n1's 4 deferred", got)
	}
	if again := th.summary(now.Add(2 * time.Minute)); len(again) != 0 {
		t.Fatalf("summary said again: %+v", again)
	}
	// Idle and nothing deferred left: forgotten.
	th.summary(now.Add(time.Hour))
	if n := len(th.nodes); n != 0 {
		t.Fatalf("%d nodes remembered after an hour idle", n)
	}
}

func TestThrottleOff(t *testing.T) {
	th := newThrottle(RateLimit{Rate: rate.Inf})
	for seq := uint64(1); seq < 1000; seq++ {
		if wait, _ := th.admit(ReportSubject("n1"), seq, time.Now()); wait != 0 {
			t.Fatalf("report %d waits %v with no limit", seq, wait)
		}
	}
}
