package projections

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Compared is one projection's state before and after Adopt, at the same
// position: Same when the two serialize to the same bytes. Kept when what
// was compared is what a checkpoint keeps of each (keptState), not the
// whole state: the live projections were restored from a checkpoint, so
// they never held what the checkpoint leaves out (the timeline's entries
// before it, the declarations beyond the newest few of a node), which a
// fold from 0 holds.
type Compared struct {
	Name     string `json:"name"`
	Same     bool   `json:"same"`
	OldBytes int    `json:"old_bytes"`
	NewBytes int    `json:"new_bytes"`
	Kept     bool   `json:"kept,omitempty"`
}

// Adopt makes live, the set r feeds, take the state of fresh, the set
// shadow feeds (a rebuild in the shadow: a runner of its own over the same
// store, from position 0), for the projections named (every projection
// shadow feeds when names is empty). Under r's fold lock, so that nothing
// is folded meanwhile: whichever of r and shadow is behind folds up to the
// other's position; each named projection's state is serialized on both
// sides and compared; then the states are exchanged, one projection at a
// time, each under its own lock. Queries never wait for the rebuild, only
// for one projection's exchange (a few pointer assignments); a query
// reading two projections may see one before and one after its exchange.
// Folding pauses for the comparison (two serializations of each named
// projection): a query waiting for an event appended meanwhile waits for
// it too. When r was restored from a checkpoint (a resume, a snapshot),
// what is compared is what a checkpoint keeps of each side (Compared.Kept):
// the whole state would differ by what the checkpoint left out, every time.
//
// When every projection of r is named, r's counters (unknown types,
// failures) are exchanged with shadow's too. Afterwards fresh holds the old
// state, and shadow must not be used again.
func (r *Runner) Adopt(ctx context.Context, live *Set, shadow *Runner, fresh *Set, names ...string) (uint64, []Compared, error) {
	if len(names) == 0 {
		for _, p := range shadow.ps {
			names = append(names, p.Name())
		}
	}
	type pair struct{ old, new Projection }
	var pairs []pair
	for _, name := range names {
		o, n := byName(live, name), byName(fresh, name)
		if o == nil || n == nil || !slices.Contains(r.ps, o) || !slices.Contains(shadow.ps, n) {
			return 0, nil, fmt.Errorf("projections: adopt: no projection %q fed by both runners", name)
		}
		pairs = append(pairs, pair{o, n})
	}
	r.fold.Lock()
	defer r.fold.Unlock()
	if err := r.load(ctx); err != nil {
		return 0, nil, err
	}
	pos, spos := r.Position(), shadow.Position()
	switch {
	case spos < pos:
		if err := shadow.CatchUpTo(ctx, pos); err != nil {
			return 0, nil, fmt.Errorf("projections: adopt: %w", err)
		}
	case pos < spos:
		if err := r.catchUp(ctx, spos); err != nil {
			return 0, nil, fmt.Errorf("projections: adopt: %w", err)
		}
	}
	if pos, spos = r.Position(), shadow.Position(); pos != spos {
		return 0, nil, fmt.Errorf("projections: adopt: the live projections are at %d, the shadow at %d", pos, spos)
	}
	kept := r.restored
	state := func(s *Set, p Projection) ([]byte, error) {
		if kept {
			return s.keptState(p)
		}
		return p.MarshalJSON()
	}
	out := make([]Compared, len(pairs))
	for i, p := range pairs {
		ob, err := state(live, p.old)
		if err != nil {
			return 0, nil, fmt.Errorf("projections: adopt: %s: %w", p.old.Name(), err)
		}
		nb, err := state(fresh, p.new)
		if err != nil {
			return 0, nil, fmt.Errorf("projections: adopt: %s: %w", p.new.Name(), err)
		}
		out[i] = Compared{Name: p.old.Name(), Same: bytes.Equal(ob, nb), OldBytes: len(ob), NewBytes: len(nb), Kept: kept}
	}
	for _, p := range pairs {
		swapState(p.old, p.new)
	}
	if len(pairs) == len(live.All()) {
		r.restored = false // every projection of live now holds a fold from 0
	}
	if len(pairs) == len(r.ps) {
		r.mu.Lock()
		shadow.mu.Lock()
		r.unknown, shadow.unknown = shadow.unknown, r.unknown
		r.failures, shadow.failures = shadow.failures, r.failures
		r.failed, shadow.failed = shadow.failed, r.failed
		shadow.mu.Unlock()
		r.mu.Unlock()
	}
	r.moved.Notify()
	return pos, out, nil
}

// Feed returns the projections of s, in fold order, that a runner must
// feed to rebuild those named (every one when none is): each named one,
// and what it reads when queried or serialized (status and the timeline
// read churn).
func (s *Set) Feed(names ...string) []Projection {
	if len(names) == 0 {
		return s.All()
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
		if n == s.Status.Name() || n == s.Timeline.Name() {
			want[s.Churn.Name()] = true
		}
	}
	var out []Projection
	for _, p := range s.All() {
		if want[p.Name()] {
			out = append(out, p)
		}
	}
	return out
}

// byName returns s's projection called name, or nil.
func byName(s *Set, name string) Projection {
	for _, p := range s.All() {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

// Names are the names of a Set's projections, sorted.
func Names() []string {
	var out []string
	for _, p := range New().All() {
		out = append(out, p.Name())
	}
	slices.Sort(out)
	return out
}

// swapState exchanges the states of a and b, two projections of one kind,
// each under its lock. What a projection reads of another (status and the
// timeline read churn) stays wired as it was. Every field but the lock and
// those links is exchanged: TestSwapStateCoversEveryField holds this list
// to the structs.
func swapState(a, b Projection) {
	switch x := a.(type) {
	case *Churn:
		y := b.(*Churn)
		lockBoth(&x.mu, &y.mu, func() {
			x.nodes, y.nodes = y.nodes, x.nodes
			x.assigned, y.assigned = y.assigned, x.assigned
		})
	case *Roster:
		y := b.(*Roster)
		lockBoth(&x.mu, &y.mu, func() {
			x.nodes, y.nodes = y.nodes, x.nodes
		})
	case *Status:
		y := b.(*Status)
		lockBoth(&x.mu, &y.mu, func() {
			x.nodes, y.nodes = y.nodes, x.nodes
			x.reports, y.reports = y.reports, x.reports
		})
	case *Holds:
		y := b.(*Holds)
		lockBoth(&x.mu, &y.mu, func() {
			x.nodes, y.nodes = y.nodes, x.nodes
			x.reports, y.reports = y.reports, x.reports
		})
	case *Timeline:
		y := b.(*Timeline)
		lockBoth(&x.mu, &y.mu, func() {
			x.chunks, y.chunks = y.chunks, x.chunks
			x.n, y.n = y.n, x.n
			x.runs, y.runs = y.runs, x.runs
			x.byNode, y.byNode = y.byNode, x.byNode
			x.byType, y.byType = y.byType, x.byType
			x.byModule, y.byModule = y.byModule, x.byModule
			x.byResource, y.byResource = y.byResource, x.byResource
			x.ordered, y.ordered = y.ordered, x.ordered
			x.flushed, y.flushed = y.flushed, x.flushed
			x.lastAt, y.lastAt = y.lastAt, x.lastAt
			x.maxAt, y.maxAt = y.maxAt, x.maxAt
			x.lag, y.lag = y.lag, x.lag
			x.decls, y.decls = y.decls, x.decls
			x.last, y.last = y.last, x.last
			x.hist, y.hist = y.hist, x.hist
			x.heldAt, y.heldAt = y.heldAt, x.heldAt
			x.reports, y.reports = y.reports, x.reports
			x.composed, y.composed = y.composed, x.composed
			x.applies, y.applies = y.applies, x.applies
			x.heads, y.heads = y.heads, x.heads
			x.prev, y.prev = y.prev, x.prev
			x.behind, y.behind = y.behind, x.behind
		})
	default:
		panic(fmt.Sprintf("projections: swap %T: not a projection of the set", a))
	}
}

// lockBoth runs fn with both locks held (a is the live one; b is the
// shadow's, which nothing else locks).
func lockBoth(a, b interface {
	Lock()
	Unlock()
}, fn func()) {
	a.Lock()
	defer a.Unlock()
	b.Lock()
	defer b.Unlock()
	fn()
}

// ErrNoProjection means a name is none of Names.
var ErrNoProjection = errors.New("no such projection")

// noProjection is an ErrNoProjection that says only which.
type noProjection string

func (e noProjection) Error() string        { return string(e) }
func (e noProjection) Is(target error) bool { return target == ErrNoProjection }

// CheckNames refuses a name that is none of Names (ErrNoProjection),
// naming them.
func CheckNames(names []string) error {
	all := Names()
	for _, n := range names {
		if !slices.Contains(all, n) {
			return noProjection(fmt.Sprintf("no projection %q: want %s", n, strings.Join(all, ", ")))
		}
	}
	return nil
}
