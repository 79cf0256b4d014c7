// Package snapstore keeps the projections of a local data directory on
// disk between CLI calls, so a read folds only the events appended since the
// last one instead of the whole log:
//
//   - DATA/projections.snap: the small projections (status, holds, roster,
//     churn), the runner's counters and the timeline's fold state, with the
//     position they folded (projections.SaveSnapshot documents the format);
//   - DATA/timeline.db: the timeline's entries, rendered, and its indexes by
//     node, type, module, resource and time, in a bbolt file of its own
//     (format below), at the same position.
//
// Why two files: the small projections are a few kilobytes per node and load
// whole in milliseconds; the timeline holds an entry per event (a million
// entries are hundreds of megabytes), too much to load for one page. In
// bbolt a filtered page reads only the index keys from its cursor and the
// entries it returns, through the page cache, whatever the history's size.
//
// The files may stay up to 1,024 events behind the store's head: a call
// that finds no more new events than that folds them in memory on top of
// what it loaded and writes nothing; one that finds more writes the
// timeline's entries and the snapshot up to 1,024 before the head.
//
// Both are caches, never the truth: a snapshot that is damaged, of another
// format version or of another history, or that disagrees with timeline.db
// about the position, is ignored with a note (Local.Notes), both are
// rebuilt from position 0, and the answer is the same. Open writes them
// only inside the data directory, atomically (the snapshot by rename,
// timeline.db by bbolt transactions), and never writes the event store; a
// data directory it cannot write makes it fold every event in memory, as
// before, with a note.
//
// # timeline.db
//
// Buckets (positions and times are 8 bytes big-endian; a time is its Unix
// nanoseconds with the sign bit flipped, so that keys sort by time):
//
//	meta      "version" → "1"; "position" → the last position flushed;
//	          "ordered" → "1" while every entry's time is at or after the one
//	          before it
//	entries   position → JSON of projections.EntryRecord
//	node, type, module, resource
//	          name 0x00 position → time: one key per entry and name (an
//	          entry with two modules is under both)
//	counts    index 0x00 name → 8 bytes, the keys under name in that index
//	time      time position → empty
//
// A page walks the index of the filter's least frequent name (by counts),
// or entries when the filter names none, from the cursor, and reads only
// the entries it returns (and those the other fields of the filter reject).
// While entries are ordered, a time range becomes a range of positions by
// two seeks in time.
package snapstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/projections"
)

// File names in the data directory.
const (
	SnapshotFile = "projections.snap"
	TimelineFile = "timeline.db"
)

// flushEvery is how many events Open folds before it writes the timeline's
// new entries out, bounding its memory while it catches up a long history.
// flushAfter is how far behind the head the files may stay: a call that
// finds fewer new events folds them in memory and writes nothing (the
// timeline's new entries are answered from memory), so a read after a few
// writes costs no commit.
var (
	flushEvery uint64 = 100_000
	flushAfter uint64 = 1024
)

// lockTimeout is how long Open waits for another CLI call holding
// timeline.db before it folds in memory instead.
const lockTimeout = 5 * time.Second

const dbVersion = "1"

var (
	bMeta    = []byte("meta")
	bEntries = []byte("entries")
	bCounts  = []byte("counts")
	bTime    = []byte("time")
	indexes  = [][]byte{[]byte("node"), []byte("type"), []byte("module"), []byte("resource")}
	kVersion = []byte("version")
	kPos     = []byte("position")
	kOrdered = []byte("ordered")
)

// ErrTimelineDB means timeline.db is not one this build reads (another
// version, or damaged); Open rebuilds it.
var ErrTimelineDB = errors.New("snapstore: timeline.db unusable")

// TimelineDB is the timeline kept in a bbolt file (see the package doc).
// It is safe for concurrent use (bbolt's transactions).
type TimelineDB struct {
	db *bolt.DB
}

// OpenTimelineDB opens (creating) the timeline index at path, holding its
// lock until Close.
func OpenTimelineDB(path string) (*TimelineDB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		return nil, fmt.Errorf("snapstore: open %s: %w", path, err)
	}
	d := &TimelineDB{db: db}
	var ok bool
	err = db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		ok = m != nil && string(m.Get(kVersion)) == dbVersion
		return nil
	})
	if err == nil && !ok {
		err = db.Update(d.reset)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("snapstore: open %s: %w", path, err)
	}
	return d, nil
}

// Close releases the file.
func (d *TimelineDB) Close() error { return d.db.Close() }

// Reset empties the index.
func (d *TimelineDB) Reset() error {
	return d.db.Update(d.reset)
}

func (d *TimelineDB) reset(tx *bolt.Tx) error {
	for _, b := range append([][]byte{bMeta, bEntries, bCounts, bTime}, indexes...) {
		if tx.Bucket(b) != nil {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	m := tx.Bucket(bMeta)
	if err := m.Put(kVersion, []byte(dbVersion)); err != nil {
		return err
	}
	if err := m.Put(kOrdered, []byte("1")); err != nil {
		return err
	}
	return m.Put(kPos, be64(0))
}

// Position is the last position flushed.
func (d *TimelineDB) Position() (uint64, error) {
	var pos uint64
	err := d.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bMeta).Get(kPos)
		if len(v) != 8 {
			return fmt.Errorf("position of %d bytes: %w", len(v), ErrTimelineDB)
		}
		pos = binary.BigEndian.Uint64(v)
		return nil
	})
	return pos, err
}

// Flush writes recs, the entries folded up to pos, in one transaction.
// ordered is the timeline's Ordered after folding them.
func (d *TimelineDB) Flush(recs []projections.EntryRecord, pos uint64, ordered bool) error {
	err := d.db.Update(func(tx *bolt.Tx) error {
		ents, tm, counts := tx.Bucket(bEntries), tx.Bucket(bTime), tx.Bucket(bCounts)
		ents.FillPercent, tm.FillPercent = 1, 1 // appended in key order
		idx := make([]*bolt.Bucket, len(indexes))
		for i, name := range indexes {
			idx[i] = tx.Bucket(name)
		}
		added := map[string]uint64{}
		var key []byte
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			en := r.Entry
			p, at := be64(en.Position), timeKey(en.At)
			if err := ents.Put(p, b); err != nil {
				return err
			}
			if err := tm.Put(append(slices.Clip(at), p...), nil); err != nil {
				return err
			}
			for i, names := range [][]string{{en.Node}, {en.Type}, en.Modules, en.Resources} {
				for _, n := range names {
					if n == "" {
						continue
					}
					key = append(append(append(key[:0], n...), 0), p...)
					if err := idx[i].Put(key, at); err != nil {
						return err
					}
					added[string(indexes[i])+"\x00"+n]++
				}
			}
		}
		for k, n := range added {
			var was uint64
			if v := counts.Get([]byte(k)); len(v) == 8 {
				was = binary.BigEndian.Uint64(v)
			}
			if err := counts.Put([]byte(k), be64(was+n)); err != nil {
				return err
			}
		}
		m := tx.Bucket(bMeta)
		o := []byte("0")
		if ordered {
			o = []byte("1")
		}
		if err := m.Put(kOrdered, o); err != nil {
			return err
		}
		return m.Put(kPos, be64(pos))
	})
	if err != nil {
		return fmt.Errorf("snapstore: flush timeline to %d: %w", pos, err)
	}
	return nil
}

// Query returns the entries f selects, in position order, without churn
// marks (Local.Timeline adds them): Timeline.Query's answer.
func (d *TimelineDB) Query(f projections.Filter) ([]projections.Entry, error) {
	var out []projections.Entry
	err := d.db.View(func(tx *bolt.Tx) error {
		ents := tx.Bucket(bEntries)
		ordered := string(tx.Bucket(bMeta).Get(kOrdered)) == "1"
		lo, hi := f.After, f.Before // exclusive; hi 0 is open
		if ordered {
			c := tx.Bucket(bTime).Cursor()
			if !f.From.IsZero() {
				k, _ := c.Seek(timeKey(f.From))
				if k == nil {
					return nil // nothing at or after From
				}
				lo = max(lo, binary.BigEndian.Uint64(k[8:])-1)
			}
			if !f.To.IsZero() {
				if k, _ := c.Seek(timeKey(f.To)); k != nil {
					p := binary.BigEndian.Uint64(k[8:])
					if hi == 0 || p < hi {
						hi = p
					}
				}
			}
		}
		// The index to walk: that of the filter's least frequent name.
		var walk *bolt.Bucket
		var prefix []byte
		best := ^uint64(0)
		counts := tx.Bucket(bCounts)
		for i, name := range []string{f.Node, f.Type, f.Module, f.Resource} {
			if name == "" {
				continue
			}
			var n uint64
			if v := counts.Get([]byte(string(indexes[i]) + "\x00" + name)); len(v) == 8 {
				n = binary.BigEndian.Uint64(v)
			}
			if n < best {
				best, walk, prefix = n, tx.Bucket(indexes[i]), append([]byte(name), 0)
			}
		}
		if best == 0 {
			return nil
		}
		if walk == nil {
			walk = ents
		}
		keep := func(k, v []byte) (bool, error) {
			if len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
				return false, nil
			}
			pos := binary.BigEndian.Uint64(k[len(prefix):])
			if walk != ents {
				if !ordered && len(v) == 8 && !inTime(v, f) {
					return true, nil
				}
				v = ents.Get(k[len(prefix):])
			}
			var r projections.EntryRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return false, fmt.Errorf("entry at %d: %v: %w", pos, err, ErrTimelineDB)
			}
			if en := r.Restore(); f.Selects(en) {
				out = append(out, en)
			}
			return f.Limit <= 0 || len(out) < f.Limit, nil
		}
		c := walk.Cursor()
		if f.Forward {
			for k, v := c.Seek(append(slices.Clip(prefix), be64(lo+1)...)); k != nil; k, v = c.Next() {
				if len(k) == len(prefix)+8 && hi > 0 && binary.BigEndian.Uint64(k[len(prefix):]) >= hi {
					break
				}
				if more, err := keep(k, v); err != nil || !more {
					return err
				}
			}
			return nil
		}
		end := ^uint64(0)
		if hi > 0 {
			end = hi
		}
		k, _ := c.Seek(append(slices.Clip(prefix), be64(end)...))
		var v []byte
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil; k, v = c.Prev() {
			if len(k) == len(prefix)+8 && binary.BigEndian.Uint64(k[len(prefix):]) <= lo {
				break
			}
			if more, err := keep(k, v); err != nil || !more {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapstore: timeline query: %w", err)
	}
	if !f.Forward {
		slices.Reverse(out)
	}
	return out, nil
}

func inTime(v []byte, f projections.Filter) bool {
	if !f.From.IsZero() && bytes.Compare(v, timeKey(f.From)) < 0 {
		return false
	}
	if !f.To.IsZero() && bytes.Compare(v, timeKey(f.To)) >= 0 {
		return false
	}
	return true
}

func be64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// timeKey is t as 8 bytes that sort as times do.
func timeKey(t time.Time) []byte { return be64(uint64(t.UnixNano()) ^ 1<<63) }

// Local is the projections of a local data directory, brought up to the
// store's head from the cache on disk (see the package doc).
type Local struct {
	Views  *projections.Set
	Runner *projections.Runner
	// Notes say what was not as expected (a cache ignored, not saved): the
	// answers are right all the same. The CLI prints them on stderr.
	Notes []string
	// From is the position the projections were loaded at (0: folded from
	// the start).
	From uint64

	store    events.Store
	reg      *events.Registry
	tl       *TimelineDB // nil: the timeline is in memory, in Views.Timeline
	snapPath string
	flushed  uint64 // timeline.db holds the entries to here; Views.Timeline those after
	saved    bool
	missing  bool // there was no snapshot file
	every    uint64
	after    uint64
}

// Options tune Open (OpenWith); a zero field is the default.
type Options struct {
	// FlushEvery is how many events Open folds between writes of the
	// timeline's entries (default 100,000).
	FlushEvery uint64
	// FlushAfter is how far behind the head the files may stay: a call
	// that finds no more new events than that writes nothing (default
	// 1,024).
	FlushAfter uint64
}

// Open brings the projections of the data directory dir up to store's
// head: it loads the snapshot and timeline.db when they agree and folds the
// events appended since. When they are more than flushAfter (1,024)
// events, it writes the timeline's entries out every flushEvery (100,000)
// and saves the snapshot at the last position written; the last events (or
// all, when fewer) stay in memory, so a call soon after another writes
// nothing.
// Errors reading the store are returned; trouble with the cache is a note.
// Close releases timeline.db (it stays locked while the Local is open, so
// two calls do not fold into it at once).
func Open(ctx context.Context, store events.Store, reg *events.Registry, dir string) (*Local, error) {
	return OpenWith(ctx, store, reg, dir, Options{})
}

// OpenWith is Open with opts.
func OpenWith(ctx context.Context, store events.Store, reg *events.Registry, dir string, opts Options) (*Local, error) {
	l := &Local{store: store, reg: reg, snapPath: filepath.Join(dir, SnapshotFile),
		every: cmp.Or(opts.FlushEvery, flushEvery), after: cmp.Or(opts.FlushAfter, flushAfter)}
	l.fresh()
	tl, err := OpenTimelineDB(filepath.Join(dir, TimelineFile))
	if err != nil {
		l.note("timeline index not usable (%v): folding every event in memory", err)
		if err := l.Runner.CatchUp(ctx); err != nil {
			return nil, err
		}
		return l, nil
	}
	l.tl = tl
	if err := l.load(ctx, l.snapPath); err != nil {
		tl.Close()
		return nil, err
	}
	l.From = l.Runner.Position()
	head, err := store.Head(ctx)
	if err != nil {
		tl.Close()
		return nil, fmt.Errorf("snapstore: head: %w", err)
	}
	if err := l.catchUp(ctx, head); err != nil {
		tl.Close()
		return nil, err
	}
	if l.missing && l.saved {
		l.note("no snapshot in %s: folded every event from position 0 and saved one at position %d (later calls resume from it)", dir, l.flushed)
	}
	if l.Views.Incomplete() {
		// An event named a declaration older than the snapshot kept.
		l.note("an event after position %d names a declaration older than the snapshot keeps: folding from position 0", l.From)
		l.fresh()
		l.From = 0
		if err := tl.Reset(); err != nil {
			tl.Close()
			return nil, err
		}
		if err := l.catchUp(ctx, head); err != nil {
			tl.Close()
			return nil, err
		}
	}
	return l, nil
}

// catchUp folds to head, writing the timeline out every flushEvery events
// while more than flushAfter remain, and the rest in memory. The snapshot
// must then be saved at l.flushed, before the rest was folded: it is saved
// under the fold lock, so catchUp saves it itself, between the two.
func (l *Local) catchUp(ctx context.Context, head uint64) error {
	l.flushed = l.Runner.Position()
	for head-l.Runner.Position() > l.after {
		if err := l.Runner.CatchUpTo(ctx, min(l.Runner.Position()+l.every, head-l.after)); err != nil {
			return err
		}
		if err := l.tl.Flush(l.Views.Timeline.TakeRecords(), l.Runner.Position(), l.Views.Timeline.Ordered()); err != nil {
			return err
		}
		l.flushed = l.Runner.Position()
	}
	if l.flushed != l.From {
		if err := projections.SaveSnapshot(ctx, l.snapPath, l.Runner, l.Views); err != nil {
			l.note("snapshot not saved (%v): the next call folds from position %d", err, l.From)
		}
		l.saved = true
	}
	return l.Runner.CatchUpTo(ctx, head)
}

func (l *Local) fresh() {
	l.Views = projections.New()
	l.Runner = projections.NewRunner(l.store, l.reg, l.Views.All()...)
}

func (l *Local) note(format string, args ...any) {
	l.Notes = append(l.Notes, fmt.Sprintf(format, args...))
}

// load resumes from the snapshot at path if it agrees with timeline.db,
// and otherwise empties timeline.db to fold from 0.
func (l *Local) load(ctx context.Context, path string) error {
	at, err := l.tl.Position()
	if err != nil {
		l.note("%v: rebuilding it", err)
		at = ^uint64(0) // agrees with no snapshot, and is reset
	}
	pos, err := projections.LoadSnapshot(ctx, path, l.Runner, l.Views)
	switch {
	case err == nil && pos == at:
		return nil
	case err == nil:
		l.note("snapshot at position %d and timeline index at %d disagree: rebuilding both", pos, at)
		l.fresh()
	case errors.Is(err, os.ErrNotExist):
		l.missing = true
	case errors.Is(err, projections.ErrSnapshot):
		l.note("%v: ignored, folding from position 0", err)
		l.fresh()
	default:
		return err
	}
	if at == 0 {
		return nil
	}
	return l.tl.Reset()
}

// Timeline is Timeline.Query's answer, churn marks included: the entries
// to the position timeline.db holds from it, those after from memory.
func (l *Local) Timeline(f projections.Filter) ([]projections.Entry, error) {
	if l.tl == nil {
		return l.Views.Timeline.Query(f), nil
	}
	mem := l.Views.Timeline // the entries after l.flushed
	// The part of f below l.flushed+1, with what is left of the limit.
	onDisk := func(got int) ([]projections.Entry, error) {
		g := f
		if f.Limit > 0 {
			if got >= f.Limit {
				return nil, nil
			}
			g.Limit = f.Limit - got
		}
		if g.After >= l.flushed {
			return nil, nil
		}
		if g.Before == 0 || g.Before > l.flushed+1 {
			g.Before = l.flushed + 1
		}
		es, err := l.tl.Query(g)
		if err != nil {
			return nil, err
		}
		return mem.Marked(es, f.Node), nil
	}
	if f.Forward {
		a, err := onDisk(0)
		if err != nil {
			return nil, err
		}
		g := f
		if f.Limit > 0 {
			if len(a) >= f.Limit {
				return a, nil
			}
			g.Limit = f.Limit - len(a)
		}
		return append(a, mem.Query(g)...), nil
	}
	b := mem.Query(f)
	a, err := onDisk(len(b))
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// Close releases timeline.db.
func (l *Local) Close() error {
	if l.tl == nil {
		return nil
	}
	return l.tl.Close()
}
