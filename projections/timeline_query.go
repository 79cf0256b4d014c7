// The timeline's queries: the walk of the narrowest index, the scan of a
// node, the time range bounded by lag, and churn marks.

package projections

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Filter selects timeline entries. Zero fields select everything.
type Filter struct {
	Node        string
	Module      string
	Resource    string // touched by an apply (created, updated, replaced, removed, held, failed)
	Type        string
	Correlation string
	From, To    time.Time // [From, To); a zero bound is open
	// After and Before bound positions, both excluded: only entries at
	// positions above After and, when Before > 0, below Before. They are the
	// cursors of a paged read.
	After, Before uint64
	// Limit > 0 keeps only Limit matches: the last ones (the newest below
	// Before), or the first ones (the oldest above After) when Forward.
	Limit   int
	Forward bool
}

// Query returns the entries f selects, in position order.
//
// It never scans more than it must: it walks the narrowest index among
// those f names (node, type, module, resource; every entry when it names
// none), from the cursor (Before, or After when Forward) found by binary
// search, with the time range narrowed the same way while entry times are
// in order, and renders only the entries it returns. So a page of Limit
// rows costs O(log n) plus the entries of that index between the cursor and
// the page's last row.
//
// The entries of a run (see SetRunReader) are read back from the store,
// a page at a time, only for a run that may hold entries f selects, and
// only as far as the answer needs. Query is Read without its error: when
// such a read fails, it returns the entries found before the failure.
func (t *Timeline) Query(f Filter) []Entry {
	out, _ := t.Read(f)
	return out
}

// Read is Query, and the error (ErrRunRead) that cut the answer short when
// the entries of a run could not be read back from the store.
func (t *Timeline) Read(f Filter) ([]Entry, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []Entry
	marks := t.churnMarks(f.Node)
	err := t.walk(f, func(e *entry) bool {
		out = append(out, t.marked(t.show(e), marks))
		return f.Limit <= 0 || len(out) < f.Limit
	})
	if !f.Forward {
		slices.Reverse(out)
	}
	return out, err
}

// walk calls fn with each entry f selects (Limit aside), newest first or,
// when f.Forward, oldest first, until fn returns false; the entries of
// runs among them (read back through the timeline's RunReader) in their
// place. An error is a run's that could not be read (ErrRunRead).
func (t *Timeline) walk(f Filter, fn func(*entry) bool) error {
	// The narrowest index f names; nil and all for every entry.
	var idx []int32
	all := true
	for _, c := range []struct {
		key string
		m   map[string][]int32
	}{{f.Node, t.byNode}, {f.Type, t.byType}, {f.Module, t.byModule}, {f.Resource, t.byResource}} {
		if c.key == "" {
			continue
		}
		l := c.m[c.key]
		if all || len(l) < len(idx) {
			idx, all = l, false
		}
	}
	n := len(idx)
	num := func(k int) int { return int(idx[k]) } // the entry number of the index's k-th
	if all {
		n = t.n
		num = func(k int) int { return k }
	}
	at := func(k int) *entry { return t.at(num(k)) }
	maxAt := func(k int) int64 { return t.entryMaxAt(num(k)) }
	// [lo, hi) is the part of the index within the bounds.
	lo, hi := 0, n
	if f.After > 0 {
		lo = sort.Search(n, func(k int) bool { return at(k).position > f.After })
	}
	if f.Before > 0 {
		hi = sort.Search(n, func(k int) bool { return at(k).position >= f.Before })
	}
	// The time range by binary search on maxAt, which ascends: an entry
	// whose maxAt is before From is before From, and one whose maxAt is at
	// or after To+lag is at or after To (its time is at most lag behind).
	if !f.From.IsZero() {
		from := nanos(f.From)
		lo = max(lo, sort.Search(n, func(k int) bool { return maxAt(k) >= from }))
	}
	if !f.To.IsZero() {
		to := nanos(f.To)
		if to < math.MaxInt64-t.lag {
			to += t.lag
		} else {
			to = math.MaxInt64
		}
		hi = min(hi, sort.Search(n, func(k int) bool { return maxAt(k) >= to }))
	}
	if runs := t.runCursors(f); runs.Len() > 0 {
		if lr, ok := t.runs.read.(LogReader); ok && runs.Len() > logRuns {
			return t.walkLog(f, lr, runs.cs, fn)
		}
		return t.merge(f, runs, lo, hi, at, fn)
	}
	if f.Forward {
		for k := lo; k < hi; k++ {
			if e := at(k); t.match(e, f) && !fn(e) {
				return nil
			}
		}
		return nil
	}
	for k := hi - 1; k >= lo; k-- {
		if e := at(k); t.match(e, f) && !fn(e) {
			return nil
		}
	}
	return nil
}

func (t *Timeline) match(e *entry, f Filter) bool {
	switch {
	case f.Node != "" && e.node != f.Node,
		f.Type != "" && e.typ != f.Type,
		e.position <= f.After,
		f.Before > 0 && e.position >= f.Before,
		f.Correlation != "" && e.correlation != f.Correlation,
		!f.From.IsZero() && e.time().Before(f.From),
		!f.To.IsZero() && !e.time().Before(f.To):
		return false
	}
	if f.Resource != "" && len(touches(e, f.Resource)) == 0 {
		return false
	}
	if f.Module != "" && !slices.Contains(modules(e), f.Module) {
		return false
	}
	return true
}

// churnMarks maps the positions at which the churn projection detected or
// cleared an episode (on node, or on every node when node is "") to what
// happened there. Rule 7: a loop is shown in the timeline too.
func (t *Timeline) churnMarks(node string) map[uint64]string {
	if t.churn == nil {
		return nil
	}
	nodes := []string{node}
	if node == "" {
		nodes = t.churn.Nodes()
	}
	marks := map[uint64]string{}
	for _, n := range nodes {
		for _, ep := range t.churn.Episodes(n) {
			kind := "loop"
			switch {
			case ep.Loop && ep.Flip:
				kind = "loop and flip"
			case ep.Flip:
				kind = "flip"
			}
			marks[ep.Detected.Position] = fmt.Sprintf("churn %s detected (episode: %d heavy passes, %d flips)", kind, ep.HeavyPasses, ep.Flips)
			if ep.End != nil {
				marks[ep.End.Position] = fmt.Sprintf("churn %s cleared after %d passes", kind, ep.Passes)
			}
		}
	}
	return marks
}

// marked adds the churn mark at en's position, if any, to en.
func (t *Timeline) marked(en Entry, marks map[uint64]string) Entry {
	if m, ok := marks[en.Position]; ok {
		en.Churn = m
		en.Summary += "; " + m
	}
	return en
}

// Ordered reports whether every entry folded so far is at or after the one
// before it in time, so that a time range is a range of positions.
func (t *Timeline) Ordered() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ordered
}

// Marked adds to es (entries of node, or of every node when node is "")
// the churn marks Query would show, in place, and returns es.
func (t *Timeline) Marked(es []Entry, node string) []Entry {
	t.mu.RLock()
	defer t.mu.RUnlock()
	marks := t.churnMarks(node)
	for i := range es {
		es[i] = t.marked(es[i], marks)
	}
	return es
}

// Selects reports whether f selects en, Limit and Forward aside, by the
// rendered entry's fields (as Query selects folded entries).
func (f Filter) Selects(en Entry) bool {
	switch {
	case f.Node != "" && en.Node != f.Node,
		f.Type != "" && en.Type != f.Type,
		f.Correlation != "" && en.Correlation != f.Correlation,
		f.Module != "" && !slices.Contains(en.Modules, f.Module),
		f.Resource != "" && !slices.Contains(en.Resources, f.Resource),
		!f.From.IsZero() && en.At.Before(f.From),
		!f.To.IsZero() && !en.At.Before(f.To),
		en.Position <= f.After,
		f.Before > 0 && en.Position >= f.Before:
		return false
	}
	return true
}
