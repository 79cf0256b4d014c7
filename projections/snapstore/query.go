package snapstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/projections"
)

// Source is what a TimelineDB renders its entries from: the event store
// the timeline was folded from, and the registry that decodes its events.
// timeline.db keeps positions and keys, not the events' payloads, which
// the store holds already.
type Source struct {
	Store events.Store
	Reg   *events.Registry
}

// Query returns the entries f selects, in position order, without churn
// marks (Local.Timeline adds them): Timeline.Query's answer, each entry
// rendered from its event in src.Store (projections.ShowEvent). Each entry
// it reads is checked (its block's checksum; through an index, that the
// entry rendered is of that name; that the store's event at the position
// is at the entry's time; positions in order): damage is an error wrapping
// ErrTimelineDB and events.ErrDamaged, never a short or wrong answer from
// what it read.
func (d *TimelineDB) Query(ctx context.Context, src Source, f projections.Filter) ([]projections.Entry, error) {
	var out []projections.Entry
	err := d.f.View(func(tx *bolt.Tx) error {
		m, err := meta(tx)
		if err != nil {
			return err
		}
		ents, tmb, counts := tx.Bucket(bEntries), tx.Bucket(bTime), tx.Bucket(bCounts)
		if ents == nil || tmb == nil || counts == nil {
			return damagedf("a bucket is missing")
		}
		q := &query{ctx: ctx, src: src, ents: ents, decls: map[uint64]*events.DeclarationComposed{}, held: map[string][]events.Held{}}
		ordered := string(m.Get(kOrdered)) == "1"
		lo, hi := f.After, f.Before // exclusive; hi 0 is open
		if ordered {
			if !f.From.IsZero() {
				p, err := q.timeAt(tmb, f.From)
				if err != nil || p == 0 {
					return err // p 0: nothing at or after From
				}
				lo = max(lo, p-1)
			}
			if !f.To.IsZero() {
				p, err := q.timeAt(tmb, f.To)
				if err != nil {
					return err
				}
				if p != 0 && (hi == 0 || p < hi) {
					hi = p
				}
			}
		}
		// The index to walk: that of the filter's least frequent name.
		walk, ix, wi := ents, string(bEntries), -1
		var name []byte
		best := ^uint64(0)
		for i, n := range []string{f.Node, f.Type, f.Module, f.Resource} {
			if n == "" {
				continue
			}
			var c uint64
			if v := counts.Get([]byte(string(indexes[i]) + "\x00" + n)); len(v) == 8 {
				c = binary.BigEndian.Uint64(v)
			}
			if c < best {
				best, wi, ix, name = c, i, string(indexes[i]), []byte(n)
				if walk = tx.Bucket(indexes[i]); walk == nil {
					return damagedf("bucket %s is missing", indexes[i])
				}
			}
		}
		if best == 0 {
			return nil
		}
		render := func(r rec) error {
			en, err := q.show(r)
			if err != nil {
				return err
			}
			if wi >= 0 && !hasName(en, wi, string(name)) {
				return damagedf("%s %q names position %d, whose entry is not of it", ix, name, r.pos)
			}
			if f.Selects(en) {
				out = append(out, en)
			}
			return nil
		}
		// A filter the walk answers alone (one name at most, no
		// correlation: every entry in its range and time is selected)
		// picks its page first and reads its events lowest first: a
		// read-only boltstore checks the pages from the lowest position
		// read to its end once, and again for each lower one.
		exact := f.Correlation == "" && countNames(f) <= 1
		var picked []rec
		err = q.walk(walk, ix, name, lo, hi, f.Forward, func(pos uint64) (bool, error) {
			r, err := q.rec(pos)
			if err != nil {
				return false, err
			}
			if !inTime(r.at, f) {
				return true, nil
			}
			if exact {
				picked = append(picked, r)
				return f.Limit <= 0 || len(picked) < f.Limit, nil
			}
			if err := render(r); err != nil {
				return false, err
			}
			return f.Limit <= 0 || len(out) < f.Limit, nil
		})
		if err != nil || len(picked) == 0 {
			return err
		}
		if err := q.warm(picked); err != nil {
			return err
		}
		for _, r := range picked {
			if err := render(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, unusable(fmt.Errorf("snapstore: timeline query: %w", err))
	}
	if !f.Forward {
		slices.Reverse(out)
	}
	return out, nil
}

// countNames is how many of the indexes' names f gives.
func countNames(f projections.Filter) int {
	n := 0
	for _, s := range []string{f.Node, f.Type, f.Module, f.Resource} {
		if s != "" {
			n++
		}
	}
	return n
}

// warm reads first the lowest position that rendering rs reads (theirs,
// their declarations', their held lists'), so that the store checks its
// pages from there once.
func (q *query) warm(rs []rec) error {
	low := ^uint64(0)
	for _, r := range rs {
		for _, p := range []uint64{r.pos, r.fold.Decl, r.fold.Held} {
			if p != 0 {
				low = min(low, p)
			}
		}
	}
	if _, err := q.src.Store.ReadAll(q.ctx, low-1, 1); err != nil {
		return fmt.Errorf("snapstore: read the event at %d: %w", low, err)
	}
	return nil
}

// query is the state of one Query: what it read last, and the
// declarations and held lists it rendered entries with.
type query struct {
	ctx   context.Context
	src   Source
	ents  *bolt.Bucket
	block []rec // the entries block read last
	decls map[uint64]*events.DeclarationComposed
	held  map[string][]events.Held
	// roster resolves a composed declaration's roster_revision (made when
	// first needed).
	roster *events.RosterBook
	// res resolves a composed declaration's resources_since (made when
	// first needed).
	res *events.ResourceBook
}

// walk calls fn with each position of name's blocks in b (nil name: of the
// entries blocks) in (lo, hi) (hi 0: open), descending, or ascending when
// forward, until fn returns false. Each block is checked, and positions
// must go one way.
func (q *query) walk(b *bolt.Bucket, ix string, name []byte, lo, hi uint64, forward bool, fn func(uint64) (bool, error)) error {
	positions := func(k, v []byte) ([]uint64, error) {
		if name != nil {
			return decodePostings(ix, k, v)
		}
		rs, err := decodeEntries(k, v)
		if err != nil {
			return nil, err
		}
		q.block = rs
		ps := make([]uint64, len(rs))
		for i, r := range rs {
			ps[i] = r.pos
		}
		return ps, nil
	}
	var last uint64
	next := func(p uint64) (bool, error) {
		if last != 0 && (forward && p <= last || !forward && p >= last) {
			return false, damagedf("%s: position %d after %d", ix, p, last)
		}
		last = p
		return fn(p)
	}
	c := b.Cursor()
	if forward {
		k, v := lastBlock(c, name, lo+1)
		if k == nil {
			k, v = c.Seek(blockKey(name, lo+1))
		}
		for ; k != nil && ofName(k, name); k, v = c.Next() {
			ps, err := positions(k, v)
			if err != nil {
				return err
			}
			for _, p := range ps {
				if p <= lo {
					continue
				}
				if hi > 0 && p >= hi {
					return nil
				}
				if more, err := next(p); err != nil || !more {
					return err
				}
			}
		}
		return nil
	}
	top := ^uint64(0)
	if hi > 0 {
		top = hi - 1
	}
	for k, v := lastBlock(c, name, top); k != nil && ofName(k, name); k, v = c.Prev() {
		ps, err := positions(k, v)
		if err != nil {
			return err
		}
		for i := len(ps) - 1; i >= 0; i-- {
			p := ps[i]
			if p > top {
				continue
			}
			if p <= lo {
				return nil
			}
			if more, err := next(p); err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// blockKey is the key of name's block from pos (nil name: an entries
// block's).
func blockKey(name []byte, pos uint64) []byte {
	if name == nil {
		return be64(pos)
	}
	return postingKey(name, pos)
}

// rec is the record of the entry at pos, from its entries block.
func (q *query) rec(pos uint64) (rec, error) {
	if n := len(q.block); n == 0 || pos < q.block[0].pos || pos > q.block[n-1].pos {
		k, v := lastBlock(q.ents.Cursor(), nil, pos)
		if k == nil {
			return rec{}, damagedf("no entry at position %d", pos)
		}
		rs, err := decodeEntries(k, v)
		if err != nil {
			return rec{}, err
		}
		q.block = rs
	}
	r, ok := find(q.block, pos)
	if !ok {
		return rec{}, damagedf("no entry at position %d", pos)
	}
	return r, nil
}

// timeAt is the position of the first entry at or after t (0: none), read
// from time and the entries blocks (which are in time order) and checked.
func (q *query) timeAt(tmb *bolt.Bucket, t time.Time) (uint64, error) {
	want := timeKey(t)
	c := tmb.Cursor()
	k, _ := c.Seek(want)
	var before []byte // the block before: its first entry is before t, later ones may not be
	if k == nil {
		before, _ = c.Last()
	} else {
		before, _ = c.Prev()
	}
	for _, key := range [][]byte{before, k} {
		if key == nil {
			continue
		}
		if len(key) != 16 {
			return 0, damagedf("time: key %x", key)
		}
		rs, err := q.blockAt(key[8:])
		if err != nil {
			return 0, err
		}
		if string(timeKey(time.Unix(0, rs[0].at))) != string(key[:8]) {
			return 0, damagedf("time: key %x names the block at %d, whose first entry is at another time", key, rs[0].pos)
		}
		for _, r := range rs {
			if r.at >= t.UnixNano() {
				return r.pos, nil
			}
		}
		if string(key) == string(k) {
			return 0, damagedf("time: key %x names a block with no entry at or after it", key)
		}
	}
	return 0, nil
}

// blockAt is the entries block under key.
func (q *query) blockAt(key []byte) ([]rec, error) {
	v := q.ents.Get(key)
	if v == nil {
		return nil, damagedf("no entries block at %x", key)
	}
	return decodeEntries(key, v)
}

// event reads the event at pos from the store and decodes it.
func (q *query) event(pos uint64) (events.Event, events.Payload, error) {
	evs, err := q.src.Store.ReadAll(q.ctx, pos-1, 1)
	if err != nil {
		return events.Event{}, nil, fmt.Errorf("snapstore: read the event at %d: %w", pos, err)
	}
	if len(evs) == 0 || evs[0].Position != pos {
		return events.Event{}, nil, damagedf("an entry at position %d, where the store holds no event", pos)
	}
	p, err := q.src.Reg.Decode(evs[0])
	if err != nil {
		return events.Event{}, nil, damagedf("an entry at position %d, whose event does not decode (%v)", pos, err)
	}
	if c, ok := p.(events.DeclarationComposed); ok && c.ByReference() {
		if q.res == nil {
			ir, _ := q.src.Store.(events.IDReader)
			q.res = events.NewResourceBook(q.src.Reg, ir)
		}
		if p, err = q.res.Resolve(q.ctx, evs[0], c); err != nil {
			return events.Event{}, nil, fmt.Errorf("snapstore: the event at %d: %w", pos, err)
		}
	}
	return evs[0], p, nil
}

// show renders the entry of r from its event.
func (q *query) show(r rec) (projections.Entry, error) {
	ev, p, err := q.event(r.pos)
	if err != nil {
		return projections.Entry{}, err
	}
	if ev.At.UnixNano() != r.at {
		return projections.Entry{}, damagedf("the entry at position %d is not at its event's time", r.pos)
	}
	if c, ok := p.(events.DeclarationComposed); ok && c.RosterRevision != 0 && c.Roster == nil {
		if q.roster == nil {
			q.roster = events.NewRosterBook(q.src.Reg, q.src.Store)
		}
		if p, err = q.roster.Resolve(q.ctx, c); err != nil {
			return projections.Entry{}, fmt.Errorf("snapstore: the entry at position %d: %w", r.pos, err)
		}
	}
	var decl *events.DeclarationComposed
	if r.fold.Decl != 0 {
		if decl, err = q.decl(r.fold.Decl); err != nil {
			return projections.Entry{}, err
		}
	}
	var held []events.Held
	if a, ok := p.(events.ApplyReported); ok && a.HeldSince != "" {
		if r.fold.Held != 0 {
			held, err = q.heldAt(r.fold.Held, ev.Stream, a.HeldSince)
		} else {
			held, err = q.heldOf(ev.Stream, a.HeldSince)
		}
		switch {
		case errors.Is(err, events.ErrHeldUnresolved):
			held = nil // names no held list: its holds are unknown, as the fold had them
		case err != nil:
			return projections.Entry{}, err
		}
	}
	return projections.ShowEvent(ev, p, r.fold, decl, held), nil
}

// decl is the composed declaration at pos.
func (q *query) decl(pos uint64) (*events.DeclarationComposed, error) {
	if d, ok := q.decls[pos]; ok {
		return d, nil
	}
	_, p, err := q.event(pos)
	if err != nil {
		return nil, err
	}
	d, ok := p.(events.DeclarationComposed)
	if !ok {
		return nil, damagedf("an entry names position %d as its declaration's, whose event is %s", pos, p.EventType())
	}
	q.decls[pos] = &d
	return &d, nil
}

// heldAt is the held list carried in full by the apply report at pos, which
// must be apply's on stream.
func (q *query) heldAt(pos uint64, stream, apply string) ([]events.Held, error) {
	k := stream + "\x00" + apply
	if h, ok := q.held[k]; ok {
		return h, nil
	}
	ev, p, err := q.event(pos)
	if err != nil {
		return nil, err
	}
	a, ok := p.(events.ApplyReported)
	if !ok || ev.Stream != stream || a.HeldSince != "" || (a.ApplyID != apply && ev.ID.String() != apply) {
		return nil, damagedf("an entry of %s names position %d for the held list of apply %s, whose event is not that report", stream, pos, apply)
	}
	q.held[k] = a.Held
	return a.Held, nil
}

// heldOf is the held list the HeldSince apply names on stream (as the fold
// resolved it: events.HeldOf, through the store's id index).
func (q *query) heldOf(stream, apply string) ([]events.Held, error) {
	k := stream + "\x00" + apply
	if h, ok := q.held[k]; ok {
		return h, nil
	}
	r, ok := q.src.Store.(events.IDReader)
	if !ok {
		return nil, fmt.Errorf("snapstore: the store reads no event by id: cannot resolve held_since %s", apply)
	}
	h, err := events.HeldOf(q.ctx, r, q.src.Reg, stream, apply)
	switch {
	case errors.Is(err, events.ErrHeldUnresolved):
		return nil, damagedf("an entry of %s whose held_since %s is not resolved (%v)", stream, apply, err)
	case err != nil:
		return nil, err
	}
	q.held[k] = h
	return h, nil
}

// hasName reports whether en is under name in index i (node, type, module,
// resource).
func hasName(en projections.Entry, i int, name string) bool {
	switch i {
	case 0:
		return en.Node == name
	case 1:
		return en.Type == name
	case 2:
		return slices.Contains(en.Modules, name)
	}
	return slices.Contains(en.Resources, name)
}

// inTime reports whether a time at (Unix nanoseconds) is in f's range.
func inTime(at int64, f projections.Filter) bool {
	if !f.From.IsZero() && at < f.From.UnixNano() {
		return false
	}
	if !f.To.IsZero() && at >= f.To.UnixNano() {
		return false
	}
	return true
}
