package bus

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Per-node rate limit of reports (ConsumeReports, WithRateLimit).
const (
	// DefaultReportRate is how many reports a second each node may have
	// handed to the controller's handler, sustained. An agent reports once
	// per apply: on each new declaration, and on its drift check (a minute
	// by default).
	DefaultReportRate rate.Limit = 1
	// DefaultReportBurst is how many a node may have handled at once: as
	// many as the stream holds of one node (reportsPerNode), so that an
	// agent back from an outage has the reports it could deliver recorded
	// at once.
	DefaultReportBurst = reportsPerNode
	// DefaultThrottleSummary is how often the reports deferred per node are
	// said (logged, and handed to the Throttled callback).
	DefaultThrottleSummary = time.Minute
)

// RateLimit is each node's limit on reports handed to the handler.
type RateLimit struct {
	Rate  rate.Limit    // reports a second per node; 0: DefaultReportRate; rate.Inf: no limit
	Burst int           // 0: DefaultReportBurst
	Every time.Duration // how often deferred reports are said; 0: DefaultThrottleSummary
}

// Throttled is one node's reports deferred by its rate limit over a window
// (From to To), as the consumer says it once a window.
type Throttled struct {
	Node     string
	Deferred uint64
	From, To time.Time
	Rate     float64 // reports a second
	Burst    int
}

// throttle is the per-node rate limit in front of the report handler. A
// report over its node's limit is neither decoded nor handed on: it is
// given back to the bus with a delay (NakWithDelay) until the time the
// limiter reserved for it, and handed on when it comes back then. So it
// costs O(1) (a map lookup, a reservation, a nak), it is never lost (rule
// 8: it waits in the stream, in order, each a reservation after the one
// before), and it never waits in a worker's queue in front of another
// node's reports.
//
// Each node's state: its limiter, the reservations of its deferred reports
// by stream sequence, and what was deferred since the last summary. A node
// quiet for idleAfter with nothing deferred is forgotten (its limiter
// starts full again), so the map holds the nodes that report, no more.
type throttle struct {
	rate  rate.Limit
	burst int
	every time.Duration

	mu    sync.Mutex
	nodes map[string]*nodeThrottle
}

type nodeThrottle struct {
	lim      *rate.Limiter
	deferred map[uint64]time.Time // stream sequence → when it may be handled
	count    uint64               // deferred since the last summary
	from     time.Time            // the first of them
	seen     time.Time
}

// admitSlack is how early a deferred report may come back and still be
// handed on (the bus's timers are not exact).
const admitSlack = 10 * time.Millisecond

// idleAfter is how long a node with nothing deferred is remembered.
const idleAfter = 10 * time.Minute

func newThrottle(l RateLimit) *throttle {
	if l.Rate == 0 {
		l.Rate = DefaultReportRate
	}
	if l.Burst <= 0 {
		l.Burst = DefaultReportBurst
	}
	if l.Every <= 0 {
		l.Every = DefaultThrottleSummary
	}
	return &throttle{rate: l.Rate, burst: l.Burst, every: l.Every, nodes: map[string]*nodeThrottle{}}
}

// admit says whether the message of stream sequence seq, on subject, may be
// handled now: 0, or how long it must wait. fresh says the wait is a new
// deferral (not a deferred report come back early).
func (t *throttle) admit(subject string, seq uint64, now time.Time) (wait time.Duration, fresh bool) {
	node, ok := strings.CutPrefix(subject, ReportSubjectPrefix)
	if !ok || seq == 0 || t.rate == rate.Inf {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes[node]
	if n == nil {
		n = &nodeThrottle{lim: rate.NewLimiter(t.rate, t.burst), deferred: map[uint64]time.Time{}}
		t.nodes[node] = n
	}
	n.seen = now
	if at, ok := n.deferred[seq]; ok {
		if wait := at.Sub(now); wait > admitSlack {
			return wait, false
		}
		delete(n.deferred, seq)
		return 0, false
	}
	r := n.lim.ReserveN(now, 1)
	if !r.OK() {
		return 0, false
	}
	wait = r.DelayFrom(now)
	if wait <= 0 {
		return 0, false
	}
	n.deferred[seq] = now.Add(wait)
	if n.count == 0 {
		n.from = now
	}
	n.count++
	return wait, true
}

// summary returns what each node had deferred since the last summary,
// sorted by node, and forgets what is stale.
func (t *throttle) summary(now time.Time) []Throttled {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Throttled
	for _, node := range slices.Sorted(maps.Keys(t.nodes)) {
		n := t.nodes[node]
		if n.count > 0 {
			out = append(out, Throttled{Node: node, Deferred: n.count, From: n.from, To: now, Rate: float64(t.rate), Burst: t.burst})
			n.count = 0
		}
		for seq, at := range n.deferred {
			if now.Sub(at) > idleAfter { // it never came back (taken by another consumer, purged)
				delete(n.deferred, seq)
			}
		}
		if len(n.deferred) == 0 && now.Sub(n.seen) > idleAfter {
			delete(t.nodes, node)
		}
	}
	return out
}

// say logs each node's deferred reports and hands them to fn.
func (t *throttle) say(log *slog.Logger, now time.Time, fn func(Throttled)) {
	for _, th := range t.summary(now) {
		log.Warn("bus: reports over their node's rate limit, deferred on the bus (each is recorded in its turn)",
			"node", th.Node, "deferred", th.Deferred, "from", th.From, "to", th.To, "rate", th.Rate, "burst", th.Burst)
		if fn != nil {
			fn(th)
		}
	}
}
