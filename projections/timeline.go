// The timeline projection: its state and its fold. Beside it:
// timeline_storage.go (chunks, slabs, heads), timeline_query.go (walk,
// scan, lag), timeline_why.go, timeline_text.go (the sentences people read)
// and timeline_export.go (its records).

package projections

import (
	"errors"
	"maps"
	"math"
	"slices"
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
// resource names and modules are worked out when an entry is read. An
// entry keeps its position and time (24 bytes with a pointer to the
// rest); a node's quiet passes in a row share the rest (head, correlation,
// declaration and resolved report: see tlPrev), so a quiet pass costs some
// 34 bytes of heap with its two index numbers (BENCHMARKS.md, "Issue 23,
// item 2"). With a reader of the store (SetRunReader), such passes in a
// row are not kept at all but counted in a run after the first
// (timeline_runs.go), and read back from the store when asked for: the
// timeline then grows with what changed, not with history.
//
// Invariant: kept entries are in position order and never modified once
// folded (the entries of runs fall between them: see tlRuns);
// they are kept in chunks of chunkSize, so the timeline grows without
// copying what it holds. byNode[n] lists the indexes of node n's entries,
// ascending; byType, byModule and byResource likewise for a type, a module
// (Filter.Module's sense) and a resource an apply touched (Filter.Resource's
// sense). The latest time folded up to an entry (entryMaxAt: its own, or
// behind's for an entry behind it) ascends, so that a time range is found
// by binary search (see walk);
// ordered is true while every entry's time is at or after the one before
// it (TimelineDB reads it).
type Timeline struct {
	mu         sync.RWMutex
	chunks     [][]entry
	n          int // entries kept (those in runs are not: see runs)
	runs       tlRuns
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
	heldAt     map[string][]heldAt            // per node, where its last held lists carried in full are (EntryFold.Held)
	churn      *Churn                         // read when queried, to mark where loops were detected and cleared; may be nil
	reports    *Reports                       // resolves compact apply reports; entries keep the resolved form
	// The payloads of composed and apply entries, which are most of them,
	// are kept here rather than each boxed on its own (see entry.p).
	composed slab[events.DeclarationComposed]
	applies  slab[tlApply]
	heads    map[tlHead]*tlHead // one of each head an entry has (see entry)
	// prev is, per node, what its entries folded last share with the next
	// (see tlPrev): a quiet pass costs its entry and its place in two
	// indexes, not a copy of its report and of its correlation's text.
	prev map[string]*tlPrev
	// behind is, for an entry whose time is before the latest folded
	// before it (a late report: rare), that latest time (its maxAt, see
	// entryMaxAt); every other entry's maxAt is its own time.
	behind map[int32]int64
}

// tlPrev is what a node's next entry may share with those before it: the
// tail of its last entry, and its last quiet apply (nil after one that was
// not quiet), which a report of the same outcome shares: both are never
// modified once folded, and equal ones read the same.
type tlPrev struct {
	tail  *tlTail
	quiet *tlApply
	// entry is the number of the node's last kept entry and run the run
	// after it, if any (see tlRuns); version is the stream version of the
	// node's last entry, kept or not.
	entry   int32
	version uint64
	run     *tlRun
}

// tail returns the tail an entry of was's node is to have: was's last one
// when equal to tl (a run of quiet passes shares one), else a new one,
// sharing its correlation's text with the last one's when equal.
func (t *Timeline) tail(was *tlPrev, tl tlTail) *tlTail {
	if w := was.tailOf(); w != nil {
		if w.same(&tl) {
			return w
		}
		if w.correlation == tl.correlation {
			tl.correlation = w.correlation
		}
	}
	n := new(tlTail) // not &tl: that would move every call's tl to the heap
	*n = tl
	if was != nil {
		was.tail = n
	}
	return n
}

// tailOf is p's last tail, nil if p is.
func (p *tlPrev) tailOf() *tlTail {
	if p == nil {
		return nil
	}
	return p.tail
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
	// (api.Collapse, api.CollapseTouches); the entry is then the run's first.
	Run *Run `json:"run,omitempty"`
	// Idle marks an apply that created, updated, replaced, removed and
	// failed nothing (it may have held, as before): a run of them reads
	// "nothing changed".
	Idle bool `json:"idle,omitempty"`
	// Held is every resource an apply held, and why, in full: a quiet
	// report stored with held_since is given the held list it names (rule
	// 3: a hold is a line in every report).
	Held []events.Held `json:"held,omitempty"`
	// HoldsUnknown: the apply's held_since names no held list
	// (ErrHoldsUnknown); Held is empty and the summary says so.
	HoldsUnknown bool `json:"holds_unknown,omitempty"`
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
	t.runs = tlRuns{read: t.runs.read}
	t.byNode = map[string][]int32{}
	t.byType = map[string][]int32{}
	t.byModule = map[string][]int32{}
	t.byResource = map[string][]int32{}
	t.ordered, t.flushed, t.lastAt = true, 0, time.Time{}
	t.maxAt, t.lag = math.MinInt64, 0
	t.heads = map[tlHead]*tlHead{}
	t.prev = map[string]*tlPrev{}
	t.behind = map[int32]int64{}
	t.decls = map[string]*declIndex[*tlDecl]{}
	t.last = map[string]*tlDecl{}
	t.hist = map[string]*events.PassHistory{}
	t.heldAt = map[string][]heldAt{}
	if t.reports == nil {
		t.reports = NewReports()
	} else {
		t.reports.Reset() // keeps its lookup
	}
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

// Len is the number of entries, those in runs included.
func (t *Timeline) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.n + t.runs.members
}

// Fold appends one entry.
func (t *Timeline) Fold(ev events.Event, p events.Payload) error {
	return t.fold(&ev, p, nodeOf(ev, p))
}

// fold is Fold of an event concerning node (nodeOf).
func (t *Timeline) fold(ev *events.Event, p events.Payload, node string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := entry{position: ev.Position}
	tl := tlTail{correlation: ev.Correlation, p: p} // e's, once interned below
	h := tlHead{stream: ev.Stream, typ: ev.Type, actor: ev.Actor, node: node}
	if h.odd = stamp(&e, ev.At); h.odd != nil {
		tl.tlHead = newHead(h) // its own: never one of t.heads
	} else {
		tl.tlHead = t.head(h)
	}
	was := t.prev[node]
	if was == nil && node != "" {
		was = &tlPrev{entry: -1}
		t.prev[node] = was
	}
	var mods, names []string // the entry's modules, and the resources an apply touched
	switch v := p.(type) {
	case events.DeclarationComposed:
		d := &tlDecl{id: v.Declaration, digest: v.Digest, resources: v.Resources, position: ev.Position}
		if prev := t.last[node]; prev != nil && slices.Equal(prev.resources, v.Resources) {
			d.resources, d.modules = prev.resources, prev.modules
		} else {
			for _, r := range v.Resources {
				d.modules = insertSorted(d.modules, r.Module)
			}
		}
		x := t.decls[node]
		if x == nil {
			x = &declIndex[*tlDecl]{}
			t.decls[node] = x
		}
		x.add(v.Declaration, d)
		t.last[node] = d
		t.history(node).Composed(v.Resources)
		tl.decl, tl.roster, tl.resources = d, int32(len(v.Roster)), int32(len(v.Resources))
		v.Roster, v.Resources, v.Specs = nil, nil, nil
		v.ResourcesSince = "" // resolved: the note, if any, stays (ResourcesUnknown)
		tl.p = t.composed.add(v)
		mods = d.modules
	case events.DeclarationPushed:
		tl.decl = t.decl(node, v.Declaration)
		mods = tl.decl.mods()
	case events.ApplyReported:
		a, err := t.reports.resolveHeld(ev, v)
		unknown := errors.Is(err, ErrHoldsUnknown)
		if err != nil && !unknown {
			return err
		}
		tl.decl = t.decl(node, a.Declaration)
		c := compactApply(&a, t.weigh(node, &a, tl.decl))
		c.digestFilled = v.Digest == "" && a.Digest != ""
		c.heldUnknown = unknown
		// The strings the timeline holds already, rather than the report's
		// copies of them: most of what a quiet report would keep.
		if c.node == node {
			c.node = node
		}
		if d := tl.decl; d != nil && d.id == c.declaration {
			c.declaration = d.id
			if d.digest == c.digest {
				c.digest = d.digest
			}
		}
		switch {
		case v.HeldSince != "" && !unknown:
			c.heldPos = t.heldPos(node, v.HeldSince)
		case len(v.Held) > 0:
			t.keepHeld(node, a.ApplyID, ev.Position)
		}
		switch {
		case was == nil || c.full != nil:
			tl.p = t.applies.add(c)
			if was != nil {
				was.quiet = nil
			}
		case was.quiet != nil && was.quiet.same(&c):
			tl.p = was.quiet
		default:
			was.quiet = t.applies.add(c)
			tl.p = was.quiet
		}
		if !quiet(&a) { // a quiet apply (most are) touched nothing: no names, no modules
			names = touched(&a)
			mods = applyModules(&a, tl.decl, names)
		}
	default:
		mods = modules(&entry{tlTail: &tl}) // none of these has a declaration
	}
	prior := was.tailOf()
	e.tlTail = t.tail(was, tl)
	t.timed(ev.At, e.at)
	if t.member(was, prior, ev, &e) {
		return nil
	}
	i := int32(t.n)
	if node != "" {
		t.byNode[node] = append(t.byNode[node], i)
	}
	t.byType[tl.typ] = append(t.byType[tl.typ], i)
	for _, m := range mods {
		t.byModule[m] = append(t.byModule[m], i)
	}
	for _, r := range names {
		t.byResource[r] = append(t.byResource[r], i)
	}
	if e.at < t.maxAt { // behind the latest before it: its maxAt is not its own
		t.behind[i] = t.maxAt
	}
	t.push(e)
	was.kept(i, ev)
	return nil
}

// timed notes the time of an event folded (at, in nanos: of its entry,
// kept or in a run): whether times are still in order, the latest and the
// lag behind it.
func (t *Timeline) timed(evAt time.Time, at int64) {
	if t.n+t.runs.members+t.flushed > 0 && evAt.Before(t.lastAt) {
		t.ordered = false
	}
	t.lastAt = evAt
	if at > t.maxAt {
		t.maxAt = at
	} else if t.maxAt-at > t.lag {
		t.lag = t.maxAt - at
	}
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

// heldAt is where a held list carried in full is: the apply id it was
// reported under, and its event's position.
type heldAt struct {
	Apply    string
	Position uint64
}

// keepHeld notes that node's apply at position carried its held list in
// full, keeping the last maxHeldLists (as Reports does).
func (t *Timeline) keepHeld(node, apply string, position uint64) {
	l := t.heldAt[node]
	if len(l) == maxHeldLists {
		l = slices.Delete(l, 0, 1)
	}
	t.heldAt[node] = append(l, heldAt{Apply: apply, Position: position})
}

// heldPos is the position of node's report that carried apply's held list
// in full, 0 if it is not among those kept.
func (t *Timeline) heldPos(node, apply string) uint64 {
	for _, h := range t.heldAt[node] {
		if h.Apply == apply {
			return h.Position
		}
	}
	return 0
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

// Timeline in a snapshot (snapshot.go has the file format, its version and
// the shared tables): a change to what follows, in shape or meaning, needs
// a new snapshotVersion.

type timelineSnap struct {
	Decls   map[string]declSnap[tlDeclSnap]
	Last    map[string]tlDeclSnap
	Hist    map[string]passHistorySnap
	HeldAt  map[string][]heldAt
	Reports reportsSnap
	// Len and Ordered are the timeline's entry count and time order, kept
	// for a TimelineDB, whose entries are on disk.
	Len        int
	Ordered    bool
	LastAt     time.Time
	MaxAt, Lag int64
}

type tlDeclSnap struct {
	Position  uint64 // of its composed event
	Digest    string
	Resources int
	Modules   int
}

func (t *Timeline) save(tb *tables) *timelineSnap {
	t.mu.RLock()
	defer t.mu.RUnlock()
	conv := func(d *tlDecl) tlDeclSnap {
		return tlDeclSnap{Position: d.position, Digest: d.digest, Resources: tb.resources(d.resources), Modules: tb.strings(d.modules)}
	}
	out := &timelineSnap{
		Decls: make(map[string]declSnap[tlDeclSnap], len(t.decls)), Last: make(map[string]tlDeclSnap, len(t.last)),
		Hist: make(map[string]passHistorySnap, len(t.hist)), HeldAt: make(map[string][]heldAt, len(t.heldAt)),
		Reports: t.reports.save(), Len: t.n + t.runs.members + t.flushed, Ordered: t.ordered, LastAt: t.lastAt, MaxAt: t.maxAt, Lag: t.lag,
	}
	for _, name := range slices.Sorted(maps.Keys(t.decls)) {
		x := t.decls[name]
		out.Decls[name] = saveDecls(x, conv)
	}
	for _, name := range slices.Sorted(maps.Keys(t.last)) {
		d := t.last[name]
		out.Last[name] = conv(d)
	}
	for name, h := range t.hist {
		out.Hist[name] = savePassHistory(h)
	}
	for name, l := range t.heldAt {
		out.HeldAt[name] = slices.Clone(l)
	}
	return out
}

// load restores the fold state of a timeline whose entries are elsewhere
// (a TimelineDB's file): it holds no entries, and counts s.Len as flushed.
func (t *Timeline) load(s *timelineSnap, st *snapState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reset()
	// A declaration shared by decls and last stays shared: it is found by
	// its tables' indexes.
	made := map[tlDeclSnap]*tlDecl{}
	conv := func(d tlDeclSnap) *tlDecl {
		if x, ok := made[d]; ok {
			return x
		}
		x := &tlDecl{position: d.Position, digest: d.Digest, resources: st.res(d.Resources), modules: st.strs(d.Modules)}
		made[d] = x
		return x
	}
	for name, ds := range s.Decls {
		x := loadDecls(ds, conv)
		t.decls[name] = &x
	}
	for name, d := range s.Last {
		t.last[name] = conv(d)
	}
	for name, h := range s.Hist {
		x := loadPassHistory(h.Containers, h.FailedLast)
		t.hist[name] = &x
	}
	for name, l := range s.HeldAt {
		t.heldAt[name] = slices.Clone(l)
	}
	t.reports.load(s.Reports)
	t.flushed, t.ordered, t.lastAt, t.maxAt, t.lag = s.Len, s.Ordered, s.LastAt, s.MaxAt, s.Lag
}
