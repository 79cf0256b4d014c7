// The timeline's runs: a node's quiet passes in a row kept as one entry
// (count, first and last), the entries inside read back from the store when
// a query asks for them one by one.

package projections

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"meshplane/events"
)

// RunReader reads a stream's events back from the store: those whose
// version is above after, at most limit of them, in version order
// (events.Store's ReadStream, which every store satisfies). The timeline
// reads the entries of its runs through it; a Runner gives it its store.
type RunReader interface {
	ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error)
}

// ErrRunRead means the entries of a run could not be read back from the
// store as they were folded (a read failed, or the stream no longer holds
// them): the answer that needed them is not given.
var ErrRunRead = errors.New("the entries of a timeline run could not be read back")

// SetRunReader gives the timeline a reader of the store it is folded from:
// from then on, a node's entries that share their tail with the one before
// it (a run of quiet passes: the same head, correlation, declaration and
// resolved report; see tlTail.same), each the next version of the node's
// stream, are kept as one run rather than an entry each, and read back
// through r when a query selects them one by one. Without a reader (nil:
// the default) every entry is kept. A Runner sets it itself; set it before
// folding, or after Reset.
func (t *Timeline) SetRunReader(r RunReader) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs.read = r
}

// tlRuns is the timeline's runs. Invariant: a run's entries are
// consecutive versions of its head's stream and consecutive among its
// node's entries (any other entry of the node ends the run), all after the
// head and sharing its tail; so an entry of a run reads as the head but
// for its position and time, which the store gives back by version.
type tlRuns struct {
	read    RunReader
	list    []*tlRun // in the order they began
	byHead  map[int32]*tlRun
	members int // entries in runs, beside the kept ones (Timeline.n)
}

// tlRun is the entries that follow a kept entry (the head) sharing its
// tail: count of them, at versions first.version to first.version+count-1
// of the head's stream.
type tlRun struct {
	head         int32 // the kept entry's number
	count        int32
	first, last  uint64 // positions
	version      uint64 // of the first
	minAt, maxAt int64  // the earliest and latest times (nanos) of its entries
}

// member reports whether the entry e of event ev (its tail interned, was
// its node's state before it, whose last tail was prior) joins a run rather
// than being kept, and if so adds it.
func (t *Timeline) member(was *tlPrev, prior *tlTail, ev *events.Event, e *entry) bool {
	if t.runs.read == nil || was == nil || prior == nil || e.tlTail != prior || e.odd != nil ||
		ev.Version == 0 || ev.Version != was.version+1 || was.entry < 0 {
		return false
	}
	r := was.run
	if r != nil && r.count == math.MaxInt32 {
		return false
	}
	if r == nil {
		if len(t.runs.list) == maxRuns {
			return false
		}
		r = &tlRun{head: was.entry, first: ev.Position, version: ev.Version, minAt: e.at, maxAt: e.at}
		t.runs.list = append(t.runs.list, r)
		if t.runs.byHead == nil {
			t.runs.byHead = map[int32]*tlRun{}
		}
		t.runs.byHead[r.head] = r
		was.run = r
	}
	r.count++
	r.last = ev.Position
	r.minAt, r.maxAt = min(r.minAt, e.at), max(r.maxAt, e.at)
	t.runs.members++
	was.version = ev.Version
	return true
}

// maxRuns bounds the runs (their heads are int32 entry numbers anyway).
const maxRuns = 1 << 30

// kept notes in was that its node's last entry is kept entry i of event ev.
func (was *tlPrev) kept(i int32, ev *events.Event) {
	if was != nil {
		was.entry, was.version, was.run = i, ev.Version, nil
	}
}

// A cursor's reads ask the store for firstPage of a run's entries, twice
// as many each read after, up to runPage: a page of a query reads little
// of each run it touches, a walk of a whole run few times.
const (
	firstPage = 8
	runPage   = 256
)

// runCursor reads one run's entries that a walk selects by position, a
// page at a time, in the walk's direction.
type runCursor struct {
	r       *tlRun
	head    *entry
	key     uint64 // the position of buf[i] once opened; before, a bound of it
	opened  bool
	buf     []entry
	i       int
	lo, hi  uint64 // the versions still to read, lo > hi when none
	forward bool
	page    uint64 // of the next read (0: firstPage)
}

// seek narrows the versions c reads to those at positions within [after,
// before) (before 0: none). The run's positions ascend with its versions,
// and a run of quiet passes of a mesh ticking steadily has them about
// evenly spaced: so the search interpolates, reading a few versions
// around its guess (seekWindow), and halves the interval instead when a
// guess did not (its worst case is a binary search's).
func (c *runCursor) seek(t *Timeline, after, before uint64) error {
	last := c.r.version + uint64(c.r.count) - 1
	// first is the lowest version whose position is target or above,
	// last+1 when none.
	first := func(target uint64) (uint64, error) {
		// a is a version below target and b one at or above it, with
		// their positions: the run's ends to begin with, read or not.
		a, pa, b, pb := c.r.version, c.r.first, last, c.r.last
		switch {
		case target <= pa:
			return a, nil
		case target > pb:
			return last + 1, nil
		}
		halve := false
		for b-a > 1 {
			g := a + (b-a)/2
			if !halve {
				g = a + uint64(float64(target-pa)/float64(pb-pa)*float64(b-a))
			}
			g = min(max(g, a+1), b-1)
			from := max(a+1, g-min(g, seekWindow/2))
			to := min(b-1, from+seekWindow-1)
			es, err := t.readRun(c.r, c.head, from, to)
			if err != nil {
				return 0, err
			}
			was := b - a
			for i, e := range es {
				if v := from + uint64(i); e.position < target {
					a, pa = v, e.position
				} else {
					b, pb = v, e.position
					break
				}
			}
			halve = b-a > was/2
		}
		return b, nil
	}
	if after >= c.r.first {
		v, err := first(after + 1)
		if err != nil {
			return err
		}
		c.lo = v
	}
	if before > 0 && before <= c.r.last && c.lo <= c.hi {
		v, err := first(before)
		if err != nil {
			return err
		}
		c.hi = v - 1
	}
	return nil
}

// seekWindow is how many versions one read of seek asks for.
const seekWindow = 8

// fill reads pages until one has an entry within [after, before) (before 0:
// none), or the run is read; ok false when it has none left.
func (c *runCursor) fill(t *Timeline, after, before uint64) (bool, error) {
	if !c.opened {
		c.opened = true
		if err := c.seek(t, after, before); err != nil {
			return false, err
		}
	}
	for c.i >= len(c.buf) {
		if c.lo > c.hi {
			return false, nil
		}
		page := max(c.page, firstPage)
		c.page = min(2*page, runPage)
		from, to := c.lo, c.hi
		if c.forward {
			to = min(c.hi, c.lo+page-1)
			c.lo = to + 1
		} else {
			if c.hi-c.lo >= page {
				from = c.hi - page + 1
			}
			c.hi = from - 1
		}
		evs, err := t.readRun(c.r, c.head, from, to)
		if err != nil {
			return false, err
		}
		c.buf, c.i = make([]entry, 0, len(evs)), 0 // a new one: the walk may hold the last's entries
		if !c.forward {
			for j := len(evs) - 1; j >= 0; j-- {
				p := evs[j].position
				if p <= after {
					c.lo, c.hi = 1, 0 // nothing further down is selected
					break
				}
				if before == 0 || p < before {
					c.buf = append(c.buf, evs[j])
				}
			}
		} else {
			for _, e := range evs {
				if before > 0 && e.position >= before {
					c.lo, c.hi = 1, 0
					break
				}
				if e.position > after {
					c.buf = append(c.buf, e)
				}
			}
		}
	}
	c.key = c.buf[c.i].position
	return true, nil
}

// readRun reads the entries of run r (head its kept entry) at versions
// from to to of its stream, checking they are the ones folded.
func (t *Timeline) readRun(r *tlRun, head *entry, from, to uint64) ([]entry, error) {
	fail := func(format string, args ...any) ([]entry, error) {
		return nil, fmt.Errorf("projections: timeline: run of %s at %d to %d: %s: %w",
			head.stream, r.first, r.last, fmt.Sprintf(format, args...), ErrRunRead)
	}
	want := int(to - from + 1)
	evs, err := t.runs.read.ReadStream(context.Background(), head.stream, from-1, want)
	if err != nil {
		return fail("read after version %d: %v", from-1, err)
	}
	if len(evs) != want {
		return fail("%d events after version %d, want %d", len(evs), from-1, want)
	}
	lastVersion := r.version + uint64(r.count) - 1
	out := make([]entry, len(evs))
	prev := uint64(0)
	for i := range evs {
		ev := &evs[i]
		v := from + uint64(i)
		switch {
		case ev.Version != v || ev.Stream != head.stream || ev.Type != head.typ,
			ev.Position <= prev || ev.Position < r.first || ev.Position > r.last,
			v == r.version && ev.Position != r.first, v == lastVersion && ev.Position != r.last:
			return fail("version %d is %s %s at %d", v, ev.Stream, ev.Type, ev.Position)
		}
		prev = ev.Position
		out[i] = entry{position: ev.Position, at: nanos(ev.At), tlTail: head.tlTail}
	}
	return out, nil
}

// cursors is a heap of run cursors, the next one to walk first: the
// highest key, or the lowest when forward.
type cursors struct {
	cs      []*runCursor
	forward bool
}

func (h *cursors) Len() int { return len(h.cs) }
func (h *cursors) Less(i, j int) bool {
	if h.forward {
		return h.cs[i].key < h.cs[j].key
	}
	return h.cs[i].key > h.cs[j].key
}
func (h *cursors) Swap(i, j int) { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *cursors) Push(x any)    { h.cs = append(h.cs, x.(*runCursor)) }
func (h *cursors) Pop() any {
	n := len(h.cs)
	x := h.cs[n-1]
	h.cs = h.cs[:n-1]
	return x
}

// runCursors is a cursor for each run that may hold entries f selects: its
// head matches f but for positions and times, and its positions and times
// meet f's bounds.
func (t *Timeline) runCursors(f Filter) *cursors {
	h := &cursors{forward: f.Forward}
	if len(t.runs.list) == 0 {
		return h
	}
	names := Filter{Node: f.Node, Module: f.Module, Resource: f.Resource, Type: f.Type, Correlation: f.Correlation}
	var from, to int64
	if !f.From.IsZero() {
		from = nanos(f.From)
	}
	if !f.To.IsZero() {
		to = nanos(f.To)
	}
	for _, r := range t.runs.list {
		switch {
		case r.last <= f.After, f.Before > 0 && r.first >= f.Before,
			!f.From.IsZero() && r.maxAt < from, !f.To.IsZero() && r.minAt >= to:
			continue
		}
		head := t.at(int(r.head))
		if !t.match(head, names) {
			continue
		}
		c := &runCursor{r: r, head: head, lo: r.version, hi: r.version + uint64(r.count) - 1, forward: f.Forward}
		if f.Forward {
			c.key = max(r.first, f.After+1)
		} else {
			c.key = r.last
			if f.Before > 0 {
				c.key = min(r.last, f.Before-1)
			}
		}
		h.cs = append(h.cs, c)
	}
	heap.Init(h)
	return h
}

// merge calls fn, in f's direction, with the kept entries k in [lo, hi) of
// at that f selects and the entries of runs that f selects, until fn
// returns false.
func (t *Timeline) merge(f Filter, h *cursors, lo, hi int, at func(int) *entry, fn func(*entry) bool) error {
	k, step := hi-1, -1
	if f.Forward {
		k, step = lo, 1
	}
	for {
		haveKept := k >= lo && k < hi
		var kept *entry
		if haveKept {
			kept = at(k)
		}
		if h.Len() > 0 {
			c := h.cs[0]
			if !haveKept || (f.Forward && c.key < kept.position) || (!f.Forward && c.key > kept.position) {
				// The run's next entry comes first: take it (once the run
				// is opened), then fill the cursor and put it in its place.
				var e *entry
				if c.opened {
					e = &c.buf[c.i]
					c.i++
				}
				ok, err := c.fill(t, f.After, f.Before)
				if err != nil {
					return err
				}
				if !ok {
					heap.Pop(h)
				} else {
					heap.Fix(h, 0)
				}
				if e != nil && t.match(e, f) && !fn(e) {
					return nil
				}
				continue
			}
		}
		if !haveKept {
			return nil
		}
		k += step
		if t.match(kept, f) && !fn(kept) {
			return nil
		}
	}
}

// nodeEntry finds node's entry at position, kept or in a run: the entry,
// node's index and the place in it of the entry (of its run's head for an
// entry of a run: what is before it among the node's entries is the same
// but for the run's entries), and ok false when node has none there.
func (t *Timeline) nodeEntry(node string, position uint64) (e *entry, idx []int32, k int, ok bool, err error) {
	idx, k, ok = t.nodeAt(node, position)
	if ok {
		return t.at(int(idx[k])), idx, k, true, nil
	}
	// An entry of a run follows the run's head among its node's entries,
	// with none kept between: the head is the node's kept entry before
	// position.
	if k == 0 {
		return nil, nil, 0, false, nil
	}
	if r := t.runs.byHead[idx[k-1]]; r != nil && position >= r.first && position <= r.last {
		head := t.at(int(r.head))
		var found *entry
		err := t.merge(Filter{Node: node, After: position - 1, Before: position + 1, Forward: true},
			&cursors{cs: []*runCursor{{r: r, head: head, key: position, lo: r.version, hi: r.version + uint64(r.count) - 1, forward: true}}, forward: true},
			0, 0, nil, func(m *entry) bool { found = m; return false })
		if err != nil || found == nil {
			return nil, nil, 0, false, err
		}
		return found, idx, k - 1, true, nil
	}
	return nil, nil, 0, false, nil
}

// LogReader is a RunReader that also reads the whole log in position
// order (events.Store's ReadAll): with one, a walk that many runs may
// answer (a page of every entry, or of a type every node has) reads the
// log from its cursor instead of every run's entries there (see walkLog).
type LogReader interface {
	ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error)
}

// logRuns is how many runs a walk may have to open before it reads the
// log instead (when the reader is a LogReader): a run costs a seek and a
// page, the log a page of events for a page of the answer when most
// events are selected.
var logRuns = 64

// logPage is how many events one read of the log asks for.
const logPage = 256

// walkLog is walk's merge read off the log: the events above after and
// below before (0: to the last folded) in f's direction, each the kept
// entry at its position or the entry of one of runs (by its stream and
// version), or neither.
func (t *Timeline) walkLog(f Filter, lr LogReader, runs []*runCursor, fn func(*entry) bool) error {
	byStream := map[string][]*runCursor{}
	for _, c := range runs {
		byStream[c.head.stream] = append(byStream[c.head.stream], c)
	}
	end := f.Before // exclusive
	if end == 0 {
		for _, c := range runs {
			end = max(end, c.r.last+1)
		}
		if t.n > 0 {
			end = max(end, t.at(t.n-1).position+1)
		}
	}
	// one is the entry of ev, nil if ev is not one of the walk's.
	one := func(ev *events.Event) (*entry, error) {
		if k := sort.Search(t.n, func(k int) bool { return t.at(k).position >= ev.Position }); k < t.n && t.at(k).position == ev.Position {
			return t.at(k), nil
		}
		for _, c := range byStream[ev.Stream] {
			r := c.r
			if ev.Version < r.version || ev.Version >= r.version+uint64(r.count) {
				continue
			}
			if ev.Type != c.head.typ || ev.Position < r.first || ev.Position > r.last {
				return nil, fmt.Errorf("projections: timeline: run of %s at %d to %d: version %d is %s at %d: %w",
					c.head.stream, r.first, r.last, ev.Version, ev.Type, ev.Position, ErrRunRead)
			}
			return &entry{position: ev.Position, at: nanos(ev.At), tlTail: c.head.tlTail}, nil
		}
		return nil, nil
	}
	read := func(after uint64, limit int) ([]events.Event, error) {
		evs, err := lr.ReadAll(context.Background(), after, limit)
		if err != nil {
			return nil, fmt.Errorf("projections: timeline: read the log after %d: %v: %w", after, err, ErrRunRead)
		}
		return evs, nil
	}
	after, err := t.logBounds(f, read, &end)
	if err != nil {
		return err
	}
	if f.Forward {
		for p := after; p+1 < end; {
			evs, err := read(p, logPage)
			if err != nil || len(evs) == 0 {
				return err
			}
			for i := range evs {
				if evs[i].Position >= end {
					return nil
				}
				e, err := one(&evs[i])
				if err != nil {
					return err
				}
				if e != nil && t.match(e, f) && !fn(e) {
					return nil
				}
			}
			p = evs[len(evs)-1].Position
		}
		return nil
	}
	for q := end; q > after+1; { // the events in (after, q), the newest first
		from := max(after, q-1-min(q-1, logPage))
		evs, err := read(from, int(q-1-from))
		if err != nil {
			return err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Position >= q {
				continue // past a gap in the positions
			}
			e, err := one(&evs[i])
			if err != nil {
				return err
			}
			if e != nil && t.match(e, f) && !fn(e) {
				return nil
			}
		}
		q = from + 1
	}
	return nil
}

// logBounds narrows the positions a log walk reads, (f.After, *end), to
// f's time range, by binary search on the log's times (a read of one event
// a step), and returns the new lower bound (*end is lowered in place). An
// event's time is at most t.lag behind the latest before it, so: when an
// event at p is more than lag before From, every event up to p is before
// From (the latest time up to p is); when one is lag or more past To,
// every event from p on is at or after To.
func (t *Timeline) logBounds(f Filter, read func(uint64, int) ([]events.Event, error), end *uint64) (uint64, error) {
	lag := uint64(t.lag)
	// behind reports whether x is more than lag before y (exactly: the
	// difference of two int64 fits a uint64).
	behind := func(x, y int64) bool { return x < y && uint64(y)-uint64(x) > lag }
	// probe is the first event at mid or above, and ok false when there
	// is none below b.
	probe := func(mid, b uint64) (int64, uint64, bool, error) {
		evs, err := read(mid-1, 1)
		if err != nil || len(evs) == 0 || evs[0].Position >= b {
			return 0, 0, false, err
		}
		return nanos(evs[0].At), evs[0].Position, true, nil
	}
	a := f.After
	if !f.From.IsZero() {
		from := nanos(f.From)
		// Invariant: every event up to a is before From; b bounds the search.
		for b := *end; b-a > 1; {
			mid := a + (b-a)/2
			at, p, ok, err := probe(mid, b)
			switch {
			case err != nil:
				return 0, err
			case ok && behind(at, from):
				a = p
			default:
				b = mid
			}
		}
	}
	if !f.To.IsZero() {
		to := nanos(f.To)
		// Invariant: every event from b on is at or after To (b is *end, or
		// such an event's position); the search is above lo.
		lo, b := a, *end
		for b-lo > 1 {
			mid := lo + (b-lo)/2
			at, p, ok, err := probe(mid, b)
			switch {
			case err != nil:
				return 0, err
			case !ok: // no event in [mid, b)
				b = mid
			case at >= to && uint64(at)-uint64(to) >= lag:
				b = p
			default:
				lo = p
			}
		}
		*end = b
	}
	return a, nil
}
