package projections

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"meshplane/events"
)

// Timeline is every event as an entry a person can read, with queries by
// node, module, resource, type, time range and correlation, and Why: the
// answer to "why was this container replaced at 23:02?".
//
// Folding is cheap: an entry keeps the envelope (without its data) and the
// decoded payload (a composed declaration's only as counts); summaries,
// resource names and modules are worked out when an entry is read.
//
// Invariant: entries are in position order and never modified once folded;
// they are kept in chunks of chunkSize, so the timeline grows without
// copying what it holds. byNode[n] lists the indexes of node n's entries,
// ascending; byType, byModule and byResource likewise for a type, a module
// (Filter.Module's sense) and a resource an apply touched (Filter.Resource's
// sense). Every entry keeps the latest time folded up to it (maxAt), which
// ascends, so that a time range is found by binary search (see walk);
// ordered is true while every entry's time is at or after the one before
// it (TimelineDB reads it).
type Timeline struct {
	mu         sync.RWMutex
	chunks     [][]entry
	n          int // entries
	byNode     map[string][]int32
	byType     map[string][]int32
	byModule   map[string][]int32
	byResource map[string][]int32
	ordered    bool
	// flushed counts entries folded before the first one held: those a
	// TimelineDB wrote out, or a snapshot's. Entry indexes start after them.
	flushed int
	lastAt  time.Time // of the last entry folded
	// maxAt is the latest time folded so far; lag, the most an entry's time
	// was ever behind the latest before it (a report delivered late keeps
	// the time it was made). Query bounds a time range with them.
	maxAt, lag int64
	decls      map[string]*declIndex[*tlDecl] // per node
	last       map[string]*tlDecl             // per node, the last composed declaration
	hist       map[string]*events.PassHistory // per node, what rule 7 weighs an apply with (events.Heavy)
	churn      *Churn                         // read when queried, to mark where loops were detected and cleared; may be nil
	reports    *Reports                       // resolves compact apply reports; entries keep the resolved form
	// The payloads of composed and apply entries, which are most of them,
	// are kept here rather than each boxed on its own (see entry.p).
	composed slab[events.DeclarationComposed]
	applies  slab[tlApply]
	heads    map[tlHead]*tlHead // one of each head an entry has (see entry)
}

// chunkSize is how many entries one chunk of the timeline holds.
const chunkSize = 4096

// entry is what the timeline keeps of one event: the envelope's fields it
// shows, and the payload.
type entry struct {
	position uint64
	at       time.Time
	// The stream, type, actor and node, which a few hundred entries share
	// (a node's reports, say), one copy for all of them: 56 bytes fewer an
	// entry, and three pointers fewer for the collector to follow.
	*tlHead
	correlation string
	// p is the payload, as decoded but for two types, kept as pointers
	// into the timeline's slabs: a *DeclarationComposed (without roster,
	// resources or specs) and a *tlApply (resolved, see Reports; applyOf
	// reads it). Never modified once folded.
	p                 events.Payload
	decl              *tlDecl // the declaration a composed, pushed or apply event is about, when known
	roster, resources int32   // counts of a composed declaration
	maxAt             int64   // the latest time (nanos) of this entry and every one before it: ascending
}

// slab keeps values in chunks and hands out pointers to them, which stay
// valid: a million payloads cost a few hundred allocations, not a million.
type slab[T any] struct{ chunks [][]T }

// slabChunk is how many values one chunk of a slab holds.
const slabChunk = 1024

func (s *slab[T]) add(v T) *T {
	if n := len(s.chunks); n == 0 || len(s.chunks[n-1]) == slabChunk {
		s.chunks = append(s.chunks, make([]T, 0, slabChunk))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, v)
	return &(*c)[len(*c)-1]
}

func (t *Timeline) at(i int) *entry { return &t.chunks[i/chunkSize][i%chunkSize] }

func (t *Timeline) push(e entry) {
	if t.n%chunkSize == 0 {
		t.chunks = append(t.chunks, make([]entry, 0, chunkSize))
	}
	c := &t.chunks[len(t.chunks)-1]
	*c = append(*c, e)
	t.n++
}

// tlHead is the part of an entry that many share (see entry).
type tlHead struct{ stream, typ, actor, node string }

// head returns the timeline's one copy of h.
func (t *Timeline) head(h tlHead) *tlHead {
	if x, ok := t.heads[h]; ok {
		return x
	}
	x := &h
	t.heads[h] = x
	return x
}

// tlApply is what the timeline keeps of a resolved apply report. Nine in
// ten reports created, updated, replaced, removed and failed nothing: those
// keep their names, counts and held list here, some 120 bytes instead of
// the report's 288 (a hundred megabytes of a million events' timeline,
// which every collection marked). The others keep the whole report too,
// and whether it was heavy (only they can be).
type tlApply struct {
	node, declaration, digest string // the entry's and its declaration's copies where equal
	held                      []events.Held
	sent, applied, unchanged  int
	full                      *tlFull // when any list but held is not empty
}

// tlFull is a whole apply report, and whether it was a heavy pass
// (events.Heavy, weighed when it was folded: the retry exception depends on
// the apply before it).
type tlFull struct {
	events.ApplyReported
	heavy bool
}

func compactApply(a *events.ApplyReported, heavy bool) tlApply {
	c := tlApply{
		node: a.Node, declaration: a.Declaration, digest: a.Digest, held: a.Held,
		sent: a.Sent, applied: a.Applied, unchanged: a.Unchanged,
	}
	if len(a.Created) > 0 || len(a.Updated) > 0 || len(a.Replaced) > 0 || len(a.Removed) > 0 || len(a.Failed) > 0 {
		c.full = &tlFull{ApplyReported: *a, heavy: heavy}
	}
	return c
}

// heavy reports whether the apply was a heavy pass.
func (a *tlApply) heavy() bool { return a.full != nil && a.full.heavy }

// EventType makes a *tlApply an entry's payload, as the report was.
func (*tlApply) EventType() string { return events.TypeApplyReported }

// report is the resolved report a stands for (a quiet one without its
// apply id, which the timeline does not show).
func (a *tlApply) report() *events.ApplyReported {
	if a.full != nil {
		return &a.full.ApplyReported
	}
	return &events.ApplyReported{
		Node: a.node, Declaration: a.declaration, Digest: a.digest, Held: a.held,
		Sent: a.sent, Applied: a.applied, Unchanged: a.unchanged,
	}
}

// applyOf is the resolved report of an apply entry.
func applyOf(e *entry) (*events.ApplyReported, bool) {
	a, ok := e.p.(*tlApply)
	if !ok {
		return nil, false
	}
	return a.report(), true
}

// tlDecl is what the timeline keeps of a composed declaration. Resources
// slices are shared with the node's previous declaration when equal.
type tlDecl struct {
	id        string // the declaration's id; "" when loaded from a snapshot
	digest    string
	resources []events.ResourceRef
	modules   []string // distinct, sorted
}

// Entry is one event as the timeline shows it.
type Entry struct {
	Position    uint64    `json:"position"`
	At          time.Time `json:"at"`
	Stream      string    `json:"stream"`
	Type        string    `json:"type"`
	Actor       string    `json:"actor,omitempty"`
	Correlation string    `json:"correlation,omitempty"`
	Node        string    `json:"node,omitempty"`
	Modules     []string  `json:"modules,omitempty"`
	Resources   []string  `json:"resources,omitempty"` // the resources an apply touched (not unchanged)
	Declaration string    `json:"declaration,omitempty"`
	Digest      string    `json:"digest,omitempty"`
	Heavy       bool      `json:"heavy,omitempty"` // a heavy pass (rule 7, events.Heavy): half its declaration's resources, or containers, or more created, replaced or removed
	Churn       string    `json:"churn,omitempty"` // "loop detected", "flip detected", "loop cleared", ... at this event
	Summary     string    `json:"summary"`
	// Run is set when the entry stands for a run of identical outcomes
	// (Collapse, CollapseTouches); the entry is then the run's first.
	Run *Run `json:"run,omitempty"`
	// Idle marks an apply that created, updated, replaced, removed and
	// failed nothing (it may have held, as before): a run of them reads
	// "nothing changed".
	Idle bool `json:"idle,omitempty"`
}

// Run is a run of entries of one node with identical outcomes, collapsed
// into one line: the same type, declaration and summary (an apply that
// touched the same resources in the same way), and no churn mark.
type Run struct {
	Count         int       `json:"count"` // entries in the run, 2 or more
	From          time.Time `json:"from"`  // the first's time
	To            time.Time `json:"to"`    // the last's time
	FirstPosition uint64    `json:"first_position"`
	LastPosition  uint64    `json:"last_position"`
}

// Collapse replaces each run of entries of one node with identical outcomes
// (see Run), consecutive among that node's entries in es, by the run's first
// entry with Run set, so that a year of quiet passes reads as a few lines.
// Entries stay in position order, a run at the place of its first entry.
// es is not modified.
func Collapse(es []Entry) []Entry {
	out := make([]Entry, 0, len(es))
	open := map[string]int{} // node → index in out of its last entry
	for _, en := range es {
		if i, ok := open[en.Node]; ok && sameOutcome(out[i], en) {
			out[i].Run = extend(out[i], en)
			continue
		}
		open[en.Node] = len(out)
		out = append(out, en)
	}
	return out
}

// CollapseTouches is Collapse for Why: consecutive touches of the resource
// with the same action, fields, reason and declaration, and no churn mark,
// become the first with its Entry.Run set.
func CollapseTouches(ts []Touch) []Touch {
	out := make([]Touch, 0, len(ts))
	for _, t := range ts {
		if n := len(out); n > 0 {
			last := out[n-1]
			if last.Action == t.Action && last.Reason == t.Reason && slices.Equal(last.Fields, t.Fields) &&
				last.Entry.Declaration == t.Entry.Declaration && last.Entry.Node == t.Entry.Node &&
				last.Entry.Churn == "" && t.Entry.Churn == "" {
				out[n-1].Entry.Run = extend(last.Entry, t.Entry)
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

func sameOutcome(a, b Entry) bool {
	return a.Type == b.Type && a.Declaration == b.Declaration && a.Summary == b.Summary &&
		a.Churn == "" && b.Churn == "" && a.Heavy == b.Heavy && slices.Equal(a.Resources, b.Resources)
}

// extend is the run of first (alone or already a run) followed by next.
func extend(first, next Entry) *Run {
	r := Run{Count: 1, From: first.At, To: first.At, FirstPosition: first.Position, LastPosition: first.Position}
	if first.Run != nil {
		r = *first.Run
	}
	r.Count++
	r.To, r.LastPosition = next.At, next.Position
	return &r
}

// Touch is one thing an apply did to one resource.
type Touch struct {
	Entry  Entry    `json:"entry"`
	Action string   `json:"action"` // created, updated, replaced, removed, held, failed
	Fields []string `json:"fields,omitempty"`
	Reason string   `json:"reason,omitempty"` // why it was held, or the failure
}

// Touch actions.
const (
	ActionCreated  = "created"
	ActionUpdated  = "updated"
	ActionReplaced = "replaced"
	ActionRemoved  = "removed"
	ActionHeld     = "held"
	ActionFailed   = "failed"
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

var _ Projection = (*Timeline)(nil)

// NewTimeline returns an empty timeline.
func NewTimeline() *Timeline {
	t := &Timeline{}
	t.reset()
	return t
}

func (t *Timeline) reset() {
	t.chunks, t.n = nil, 0
	t.byNode = map[string][]int32{}
	t.byType = map[string][]int32{}
	t.byModule = map[string][]int32{}
	t.byResource = map[string][]int32{}
	t.ordered, t.flushed, t.lastAt = true, 0, time.Time{}
	t.maxAt, t.lag = math.MinInt64, 0
	t.heads = map[tlHead]*tlHead{}
	t.decls = map[string]*declIndex[*tlDecl]{}
	t.last = map[string]*tlDecl{}
	t.hist = map[string]*events.PassHistory{}
	t.reports = NewReports()
	t.composed, t.applies = slab[events.DeclarationComposed]{}, slab[tlApply]{}
}

// Name is "timeline".
func (t *Timeline) Name() string { return "timeline" }

// Reset forgets everything.
func (t *Timeline) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reset()
}

// Len is the number of entries.
func (t *Timeline) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.n
}

// Fold appends one entry.
func (t *Timeline) Fold(ev events.Event, p events.Payload) error {
	return t.fold(&ev, p, nodeOf(ev, p))
}

// fold is Fold of an event concerning node (nodeOf).
func (t *Timeline) fold(ev *events.Event, p events.Payload, node string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := entry{
		position: ev.Position, at: ev.At, tlHead: t.head(tlHead{stream: ev.Stream, typ: ev.Type, actor: ev.Actor, node: node}),
		correlation: ev.Correlation, p: p,
	}
	var mods, names []string // the entry's modules, and the resources an apply touched
	switch v := p.(type) {
	case events.DeclarationComposed:
		d := &tlDecl{id: v.Declaration, digest: v.Digest, resources: v.Resources}
		if prev := t.last[e.node]; prev != nil && slices.Equal(prev.resources, v.Resources) {
			d.resources, d.modules = prev.resources, prev.modules
		} else {
			for _, r := range v.Resources {
				d.modules = insertSorted(d.modules, r.Module)
			}
		}
		x := t.decls[e.node]
		if x == nil {
			x = &declIndex[*tlDecl]{}
			t.decls[e.node] = x
		}
		x.add(v.Declaration, d)
		t.last[e.node] = d
		t.history(e.node).Composed(v.Resources)
		e.decl, e.roster, e.resources = d, int32(len(v.Roster)), int32(len(v.Resources))
		v.Roster, v.Resources, v.Specs = nil, nil, nil
		e.p = t.composed.add(v)
		mods = d.modules
	case events.DeclarationPushed:
		e.decl = t.decl(e.node, v.Declaration)
		mods = modules(&e)
	case events.ApplyReported:
		a, err := t.reports.resolveHeld(ev, v)
		if err != nil {
			return err
		}
		e.decl = t.decl(e.node, a.Declaration)
		c := compactApply(&a, t.weigh(e.node, &a, e.decl))
		// The strings the timeline holds already, rather than the report's
		// copies of them: most of what a quiet report would keep.
		if c.node == e.node {
			c.node = e.node
		}
		if d := e.decl; d != nil && d.id == c.declaration {
			c.declaration = d.id
			if d.digest == c.digest {
				c.digest = d.digest
			}
		}
		e.p = t.applies.add(c)
		if !quiet(&a) { // a quiet apply (most are) touched nothing: no names, no modules
			names = touched(&a)
			mods = applyModules(&a, e.decl, names)
		}
	default:
		mods = modules(&e)
	}
	i := int32(t.n)
	if e.node != "" {
		t.byNode[e.node] = append(t.byNode[e.node], i)
	}
	t.byType[e.typ] = append(t.byType[e.typ], i)
	for _, m := range mods {
		t.byModule[m] = append(t.byModule[m], i)
	}
	for _, r := range names {
		t.byResource[r] = append(t.byResource[r], i)
	}
	if t.n+t.flushed > 0 && e.at.Before(t.lastAt) {
		t.ordered = false
	}
	t.lastAt = e.at
	at := nanos(e.at)
	if at > t.maxAt {
		t.maxAt = at
	} else if t.maxAt-at > t.lag {
		t.lag = t.maxAt - at
	}
	e.maxAt = t.maxAt
	t.push(e)
	return nil
}

// nanos is t in Unix nanoseconds, saturated outside the years 1700 to 2200
// (where UnixNano is undefined), so that it orders as times do.
func nanos(t time.Time) int64 {
	switch y := t.Year(); {
	case y < 1700:
		return math.MinInt64 + 1
	case y > 2200:
		return math.MaxInt64 - 1
	}
	return t.UnixNano()
}

// history returns node's pass history ("" has none: a throwaway one).
func (t *Timeline) history(node string) *events.PassHistory {
	if node == "" {
		return &events.PassHistory{}
	}
	h := t.hist[node]
	if h == nil {
		h = &events.PassHistory{}
		t.hist[node] = h
	}
	return h
}

// weigh weighs apply a of declaration d (nil when unknown) on node by rule
// 7 (events.Heavy), and keeps what it failed for the node's next apply.
func (t *Timeline) weigh(node string, a *events.ApplyReported, d *tlDecl) bool {
	resources, containers := 0, 0
	if d != nil {
		resources = len(d.resources)
		if !quiet(a) { // a quiet apply changed nothing: never heavy, whatever it counts
			for _, r := range d.resources {
				if r.Kind == declarationKindContainer {
					containers++
				}
			}
		}
	}
	return t.history(node).Applied(a, resources, containers)
}

// declarationKindContainer is declaration.KindContainer, the kind of a
// container among a composed declaration's resources.
const declarationKindContainer = "container"

// decl returns node's latest composed declaration of id, nil if none (while
// folding).
func (t *Timeline) decl(node, id string) *tlDecl {
	if x := t.decls[node]; x != nil {
		d, _ := x.get(id)
		return d
	}
	return nil
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
func (t *Timeline) Query(f Filter) []Entry {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []Entry
	marks := t.churnMarks(f.Node)
	t.walk(f, func(e *entry) bool {
		out = append(out, t.marked(t.show(e), marks))
		return f.Limit <= 0 || len(out) < f.Limit
	})
	if !f.Forward {
		slices.Reverse(out)
	}
	return out
}

// walk calls fn with each entry f selects (Limit aside), newest first or,
// when f.Forward, oldest first, until fn returns false.
func (t *Timeline) walk(f Filter, fn func(*entry) bool) {
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
	at := func(k int) *entry { return t.at(int(idx[k])) }
	if all {
		n = t.n
		at = func(k int) *entry { return t.at(k) }
	}
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
		lo = max(lo, sort.Search(n, func(k int) bool { return at(k).maxAt >= from }))
	}
	if !f.To.IsZero() {
		to := nanos(f.To)
		if to < math.MaxInt64-t.lag {
			to += t.lag
		} else {
			to = math.MaxInt64
		}
		hi = min(hi, sort.Search(n, func(k int) bool { return at(k).maxAt >= to }))
	}
	if f.Forward {
		for k := lo; k < hi; k++ {
			if e := at(k); t.match(e, f) && !fn(e) {
				return
			}
		}
		return
	}
	for k := hi - 1; k >= lo; k-- {
		if e := at(k); t.match(e, f) && !fn(e) {
			return
		}
	}
}

// scan calls fn with the entries of node (or all, when node is ""), newest
// first, until fn returns false.
func (t *Timeline) scan(node string, fn func(*entry) bool) {
	if node == "" {
		for i := t.n - 1; i >= 0; i-- {
			if !fn(t.at(i)) {
				return
			}
		}
		return
	}
	idx := t.byNode[node]
	for i := len(idx) - 1; i >= 0; i-- {
		if !fn(t.at(int(idx[i]))) {
			return
		}
	}
}

func (t *Timeline) match(e *entry, f Filter) bool {
	switch {
	case f.Node != "" && e.node != f.Node,
		f.Type != "" && e.typ != f.Type,
		e.position <= f.After,
		f.Before > 0 && e.position >= f.Before,
		f.Correlation != "" && e.correlation != f.Correlation,
		!f.From.IsZero() && e.at.Before(f.From),
		!f.To.IsZero() && !e.at.Before(f.To):
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

// Why returns what every apply on node did to resource, oldest first, each
// with the declaration (and digest) and correlation it came from: follow
// the correlation to the compose and push of that declaration (every apply
// of a declaration shares its compose's correlation, since a push that
// changes nothing re-sends the stored declaration). CollapseTouches folds
// runs of the same touch into one.
func (t *Timeline) Why(node, resource string) ([]Touch, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if _, ok := t.byNode[node]; !ok {
		return nil, fmt.Errorf("projections: why %s on %q: %w", resource, node, ErrUnknownNode)
	}
	var out []Touch
	marks := t.churnMarks(node)
	t.scan(node, func(e *entry) bool {
		ts := touches(e, resource)
		if len(ts) > 0 {
			shown := t.marked(t.show(e), marks)
			for i := len(ts) - 1; i >= 0; i-- {
				ts[i].Entry = shown
				out = append(out, ts[i])
			}
		}
		return true
	})
	slices.Reverse(out)
	return out, nil
}

// touches lists what an apply entry did to the resource named name.
func touches(e *entry, name string) []Touch {
	a, ok := applyOf(e)
	if !ok {
		return nil
	}
	var out []Touch
	for _, s := range a.Created {
		if s == name {
			out = append(out, Touch{Action: ActionCreated})
		}
	}
	for _, r := range a.Updated {
		if r.Name == name {
			out = append(out, Touch{Action: ActionUpdated, Fields: r.Fields})
		}
	}
	for _, r := range a.Replaced {
		if r.Name == name {
			out = append(out, Touch{Action: ActionReplaced, Fields: r.Fields})
		}
	}
	for _, s := range a.Removed {
		if s == name {
			out = append(out, Touch{Action: ActionRemoved})
		}
	}
	for _, h := range a.Held {
		if h.Name == name {
			out = append(out, Touch{Action: ActionHeld, Reason: h.Reason})
		}
	}
	for _, f := range a.Failed {
		if f.Name == name {
			out = append(out, Touch{Action: ActionFailed, Reason: f.Error})
		}
	}
	return out
}

// quiet reports whether apply a touched nothing at all (it held nothing
// either): touched(a) and applyModules(a, …) are then empty.
func quiet(a *events.ApplyReported) bool {
	return len(a.Created) == 0 && len(a.Updated) == 0 && len(a.Replaced) == 0 &&
		len(a.Removed) == 0 && len(a.Held) == 0 && len(a.Failed) == 0
}

// touched lists, sorted and distinct, the resources an apply entry touched.
func touched(a *events.ApplyReported) []string {
	var out []string
	out = append(out, a.Created...)
	for _, r := range a.Updated {
		out = append(out, r.Name)
	}
	for _, r := range a.Replaced {
		out = append(out, r.Name)
	}
	out = append(out, a.Removed...)
	for _, h := range a.Held {
		out = append(out, h.Name)
	}
	for _, f := range a.Failed {
		out = append(out, f.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// modules lists, sorted and distinct, the modules an entry concerns.
func modules(e *entry) []string {
	switch v := e.p.(type) {
	case events.ModuleDefined:
		return []string{v.Module}
	case events.ModuleAssigned:
		return []string{v.Module}
	case events.ModuleReleased:
		return []string{v.Module}
	case events.ModuleTaken:
		return []string{v.Module}
	case events.ArtifactRecorded:
		return []string{v.Module}
	case events.ModuleDeployed:
		return []string{v.Module}
	case *events.DeclarationComposed, events.DeclarationPushed:
		if e.decl != nil {
			return e.decl.modules
		}
	case *tlApply:
		a := v.report()
		if e.decl == nil {
			return applyModules(a, nil, nil)
		}
		return applyModules(a, e.decl, touched(a))
	}
	return nil
}

// applyModules lists, sorted and distinct, the modules of what apply a
// held and, where its declaration d is known, of the resources of d it
// touched (names: touched(a)).
func applyModules(a *events.ApplyReported, d *tlDecl, names []string) []string {
	var out []string
	for _, h := range a.Held {
		out = insertSorted(out, h.Module)
	}
	if d != nil {
		for _, r := range d.resources {
			if _, ok := slices.BinarySearch(names, r.Name); ok {
				out = insertSorted(out, r.Module)
			}
		}
	}
	return out
}

// show renders an entry.
func (t *Timeline) show(e *entry) Entry {
	out := Entry{
		Position: e.position, At: e.at, Stream: e.stream, Type: e.typ,
		Actor: e.actor, Correlation: e.correlation, Node: e.node, Modules: modules(e),
	}
	if e.decl != nil {
		out.Digest = e.decl.digest
	}
	switch v := e.p.(type) {
	case *events.DeclarationComposed:
		out.Declaration, out.Digest = v.Declaration, v.Digest
	case events.DeclarationPushed:
		out.Declaration = v.Declaration
		if v.Digest != "" {
			out.Digest = v.Digest
		}
	case events.DeclarationPushFailed:
		out.Declaration = v.Declaration
	case *tlApply:
		a := v.report()
		out.Declaration = a.Declaration
		if a.Digest != "" {
			out.Digest = a.Digest
		}
		out.Resources = touched(a)
		out.Heavy = v.heavy()
		out.Idle = a.Changes() == 0 && len(a.Updated) == 0 && len(a.Failed) == 0
	case events.ReportDeliveredLate:
		out.Declaration = v.Declaration
	case events.ReportRefused:
		out.Declaration = v.Declaration
	}
	out.Summary = summarize(e)
	return out
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

// summaryNames is how many names a summary lists before "and N more".
const summaryNames = 5

// summarize is the one line an entry reads as.
func summarize(e *entry) string {
	switch v := e.p.(type) {
	case events.NodeRegistered:
		return fmt.Sprintf("node %s registered", e.node)
	case events.NodeAdopted:
		return fmt.Sprintf("node %s adopted", e.node)
	case events.NodeSettingSet:
		if v.Value == "" {
			return fmt.Sprintf("%s cleared on %s", v.Key, e.node)
		}
		return fmt.Sprintf("%s set to %s on %s", v.Key, v.Value, e.node)
	case events.ModuleDefined:
		return fmt.Sprintf("module %s defined: %d container(s), %d routed name(s)", v.Module, len(v.Spec.Containers), len(v.Spec.Routes))
	case events.ModuleAssigned:
		return fmt.Sprintf("%s assigned to %s", v.Module, v.Node)
	case events.ModuleReleased:
		return fmt.Sprintf("%s released from %s", v.Module, v.Node)
	case events.ModuleTaken:
		return fmt.Sprintf("%s taken on %s", v.Module, v.Node)
	case events.ArtifactRecorded:
		s := fmt.Sprintf("artifact %s of %s recorded at %s", v.Name, v.Module, v.Digest)
		if v.Upgrade == events.UpgradeManual {
			s += " (upgrade: manual)"
		}
		return s
	case events.ModuleDeployed:
		return deployedLine(v)
	case *events.DeclarationComposed:
		s := fmt.Sprintf("composed %s for %s: %d resource(s), %d routed name(s)", v.Declaration, e.node, e.resources, e.roster)
		if len(v.Warnings) > 0 {
			s += fmt.Sprintf(", %d warning(s)", len(v.Warnings))
		}
		if len(v.Skipped) > 0 {
			s += fmt.Sprintf(", %d node(s) skipped", len(v.Skipped))
		}
		return s
	case events.DeclarationComposeFailed:
		return fmt.Sprintf("compose for %s failed: %s", e.node, v.Error)
	case events.DeclarationPushed:
		return fmt.Sprintf("pushed %s to %s: %d resource(s)", v.Declaration, e.node, v.Resources)
	case events.DeclarationPushFailed:
		return fmt.Sprintf("push of %s to %s failed: %s", v.Declaration, e.node, v.Error)
	case *tlApply:
		return applyLine(v.report())
	case events.ReportDeliveredLate:
		s := fmt.Sprintf("report of %s delivered late, after %d attempt(s)", v.Declaration, v.Attempts)
		if v.LastError != "" {
			s += ": " + v.LastError
		}
		return s
	case events.ReportRefused:
		return refusedLine(e.node, v)
	case events.ReportThrottled:
		return fmt.Sprintf("%s sent reports faster than its limit (%g a second, bursts of %d): %d deferred from %s to %s, each recorded in its turn",
			e.node, v.Rate, v.Burst, v.Deferred, v.From.UTC().Format(time.TimeOnly), v.To.UTC().Format(time.TimeOnly))
	}
	return e.typ
}

// refusedLine is a report.refused's summary: "report from n1 refused
// (bad-counts): …; 52 bytes, sha256:ab12…".
func refusedLine(node string, v events.ReportRefused) string {
	var b strings.Builder
	fmt.Fprintf(&b, "report from %s refused (%s)", node, v.Reason)
	if v.Detail != "" {
		b.WriteString(": ")
		b.WriteString(v.Detail)
	}
	fmt.Fprintf(&b, "; %d bytes, %s", v.Size, v.Digest)
	return b.String()
}

// deployedLine is a module.deployed's summary: "forge deployed: forge/web at
// sha256:…, deployed by roll-out policy".
func deployedLine(v events.ModuleDeployed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s deployed:", v.Module)
	for i, bd := range v.Builds {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s at %s", bd.Name, bd.Digest)
	}
	switch v.By {
	case events.DeployedByRollOut:
		b.WriteString("; deployed by roll-out policy")
	case events.DeployedByFirstBuild:
		b.WriteString("; the first build deploys itself")
	case events.DeployedByOperator:
		b.WriteString("; deployed by mesh deploy")
	}
	return b.String()
}

// applyLine is an apply's Summary, then what it did by name:
// "applied 3 resource(s); replaced web (mounts); created db".
func applyLine(a *events.ApplyReported) string {
	var b strings.Builder
	b.WriteString(a.Summary())
	list := func(verb string, n int, name func(int) string) {
		if n == 0 {
			return
		}
		b.WriteString("; ")
		b.WriteString(verb)
		for i := 0; i < n && i < summaryNames; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(" ")
			b.WriteString(name(i))
		}
		if n > summaryNames {
			fmt.Fprintf(&b, " and %d more", n-summaryNames)
		}
	}
	withFields := func(r events.Replaced) string {
		if len(r.Fields) == 0 {
			return r.Name
		}
		return r.Name + " (" + strings.Join(r.Fields, ", ") + ")"
	}
	list("created", len(a.Created), func(i int) string { return a.Created[i] })
	list("replaced", len(a.Replaced), func(i int) string { return withFields(a.Replaced[i]) })
	list("updated", len(a.Updated), func(i int) string { return withFields(a.Updated[i]) })
	list("removed", len(a.Removed), func(i int) string { return a.Removed[i] })
	list("failed", len(a.Failed), func(i int) string { return a.Failed[i].Name + " (" + a.Failed[i].Error + ")" })
	return b.String()
}

// MarshalJSON writes every entry, in position order.
func (t *Timeline) MarshalJSON() ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Entry, t.n)
	for i := range out {
		out[i] = t.show(t.at(i))
	}
	return marshal(out)
}

// EntryRecord is an entry as a timeline kept outside memory stores it (see
// TakeRecords): the entry, without its churn mark.
type EntryRecord struct {
	Entry Entry `json:"entry"`
}

// Restore is the entry the record stands for.
func (r EntryRecord) Restore() Entry { return r.Entry }

// TakeRecords renders every entry the timeline holds, without churn marks
// (Marked adds them when read), and forgets them, keeping what it needs to
// fold on (declarations, the report resolver, the count and time order): a
// TimelineDB writes them out. Queries of the timeline itself then see only
// the entries folded since.
func (t *Timeline) TakeRecords() []EntryRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]EntryRecord, t.n)
	for i := range out {
		en := t.show(t.at(i))
		out[i] = EntryRecord{Entry: en}
	}
	t.flushed += t.n
	t.chunks, t.n = nil, 0
	t.composed, t.applies = slab[events.DeclarationComposed]{}, slab[tlApply]{}
	t.byNode = map[string][]int32{}
	t.byType = map[string][]int32{}
	t.byModule = map[string][]int32{}
	t.byResource = map[string][]int32{}
	t.heads = map[tlHead]*tlHead{}
	return out
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
