// Package snapstore keeps the projections of a local data directory on
// disk between CLI calls, so a read folds only the events appended since the
// last one instead of the whole log:
//
//   - DATA/projections.snap: the small projections (status, holds, roster,
//     churn), the runner's counters and the timeline's fold state, with the
//     position they folded (projections.SaveSnapshot documents the format);
//   - DATA/timeline.db: the timeline's entries as positions, times and keys
//     (rendered from the store's events when read), and its indexes by
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
// # Damage
//
// Both are caches, never the truth: what cannot be used is passed over
// with a note (Local.Notes), rebuilt from the event store, and the answer
// is the same. A snapshot that is damaged (its checksum or length fails,
// it does not decode) is removed; one of another format version or another
// history, or that disagrees with timeline.db about the position, is
// ignored and written again. timeline.db is checked before bbolt reads it
// (its meta pages, its length, its freelist: boltstore.OpenFile); one that
// fails, or is of another format version, is removed under its lock and
// made anew, empty. One that is not the file the snapshot recorded
// (stamps, check.go) is checked whole before use. Every call into bbolt
// runs under boltstore's guard (a panic, or a fault in its memory map, is an
// error), every entry read is checked, and any damage found later, while
// folding or answering, makes the call fold every event in memory instead
// and remove the file, which the next call rebuilds. Open writes the files
// only inside the data directory, atomically (the snapshot by rename,
// timeline.db by bbolt transactions), and never writes the event store; a
// data directory it cannot write makes it fold every event in memory, as
// before, with a note.
//
// # timeline.db
//
// It keeps positions and keys, not copies of what the event store holds: a
// query reads the entries it returns from the store's events and renders
// them (projections.ShowEvent), with what the fold knew of each. Buckets
// (positions are 8 bytes big-endian; a time key is its Unix nanoseconds
// with the sign bit flipped, so that keys sort by time):
//
//	meta      "version" → "4"; "position" → the last position flushed;
//	          "ordered" → "1" while every entry's time is at or after the one
//	          before it
//	entries   the first position of a block → up to 256 consecutive
//	          entries: each its position, its time (delta-coded), and what
//	          the fold knew (projections.EntryFold: the position of its
//	          declaration's composed event, heavy, a resolved digest)
//	node, type, module, resource
//	          name 0x00 the first position of a block → up to 1,024
//	          positions of that name's entries, delta-coded (an entry with
//	          two modules is under both)
//	counts    index 0x00 name → 8 bytes, the positions under name in that
//	          index
//	time      the time key of an entries block's first entry, then its
//	          position → empty
//
// Every block ends with the CRC-32C (Castagnoli) of its key and its bytes,
// 4 bytes big-endian. A flush appends: new entries blocks, and each name's
// positions to its last postings block until it is full, then in new ones;
// a million events are some 4,000 entries blocks and a few thousand
// postings blocks, written in large transactions. A page walks the
// postings of the filter's least frequent name (by counts), or the entries
// blocks when the filter names none, from the cursor, and reads from the
// store only the events of the entries it returns (and of those the other
// fields of the filter reject); a held_since is resolved through the
// store's id index (events.HeldOf), as the fold did. While entries are
// ordered, a time range becomes a range of positions by two seeks in time
// and one entries block each. A file of an older version (1 to 3: entries
// as JSON) is replaced.
package snapstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

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

// smallFile is the size of a timeline.db checked whole, rather than
// replaced, when there is no snapshot to say what it holds: an empty index
// is a few pages.
const smallFile = 1 << 20

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
	dir      string
	snapPath string
	flushed  uint64 // timeline.db holds the entries to here; Views.Timeline those after
	saved    bool
	missing  bool // there was no snapshot file
	restamp  bool // timeline.db was checked whole: save the snapshot, with its stamp
	every    uint64
	after    uint64
	onNote   func(string)
	keeper   *projections.Keeper

	mu   sync.Mutex
	full *fold // the whole history folded in memory, after timeline.db failed a query
}

// fold is a set of projections folded from position 0.
type fold struct {
	set *projections.Set
	r   *projections.Runner
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
	// OnNote, if set, is called with each note as it is made (Local.Notes
	// keeps them all): a note made after Open, by Timeline, is seen too.
	OnNote func(string)
	// Keeper, if set, keeps the projections' checkpoints as Open folds
	// (projections.Runner.Keep): mesh ... --at folds from them.
	Keeper *projections.Keeper
}

// Open brings the projections of the data directory dir up to store's
// head: it loads the snapshot and timeline.db when they agree and folds the
// events appended since. When they are more than flushAfter (1,024)
// events, it writes the timeline's entries out every flushEvery (100,000)
// and saves the snapshot at the last position written; the last events (or
// all, when fewer) stay in memory, so a call soon after another writes
// nothing.
// Errors reading the store are returned; trouble with the cache, damage
// included, is a note.
// Close releases timeline.db (it stays locked while the Local is open, so
// two calls do not fold into it at once).
func Open(ctx context.Context, store events.Store, reg *events.Registry, dir string) (*Local, error) {
	return OpenWith(ctx, store, reg, dir, Options{})
}

// OpenWith is Open with opts.
func OpenWith(ctx context.Context, store events.Store, reg *events.Registry, dir string, opts Options) (*Local, error) {
	l := &Local{store: store, reg: reg, dir: dir, snapPath: filepath.Join(dir, SnapshotFile),
		every: cmp.Or(opts.FlushEvery, flushEvery), after: cmp.Or(opts.FlushAfter, flushAfter), onNote: opts.OnNote, keeper: opts.Keeper}
	l.fresh()
	tl, err := OpenTimelineDB(filepath.Join(dir, TimelineFile))
	if err != nil {
		l.note("timeline index not usable (%v): folding every event in memory", err)
		if err := l.Runner.CatchUp(ctx); err != nil {
			return nil, err
		}
		return l, nil
	}
	if tl.Replaced != nil {
		l.note("%s %s: removed it, and made it again from the event store", TimelineFile, why(tl.Replaced))
	}
	l.tl = tl
	head, err := store.Head(ctx)
	if err != nil {
		tl.Close()
		return nil, fmt.Errorf("snapstore: head: %w", err)
	}
	err = l.load(ctx)
	if err == nil {
		l.From = l.Runner.Position()
		err = l.catchUp(ctx, head)
	}
	if err == nil && l.missing && l.saved {
		l.note("no snapshot in %s: folded every event from position 0 and saved one at position %d (later calls resume from it)", dir, l.flushed)
	}
	if err == nil && l.Views.Incomplete() {
		// An event named a declaration older than the snapshot kept.
		l.note("an event after position %d names a declaration older than the snapshot keeps: folding from position 0", l.From)
		l.fresh()
		l.From = 0
		if l.tl, err = l.tl.Replace(); err == nil {
			err = l.catchUp(ctx, head)
		}
	}
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, ErrTimelineDB):
		// timeline.db failed while folding: pass it over.
		l.passOver(err)
		l.fresh()
		l.From = 0
		if err := l.Runner.CatchUpTo(ctx, head); err != nil {
			return nil, err
		}
		return l, nil
	default:
		l.Close()
		return nil, err
	}
}

// why is a note's account of err, timeline.db's trouble.
func why(err error) string {
	if errors.Is(err, events.ErrDamaged) {
		return fmt.Sprintf("is damaged (%s)", trimDamaged(err))
	}
	return fmt.Sprintf("could not be used (%v)", err)
}

// passOver gives up timeline.db after err, with a note: a damaged file is
// removed (the next call makes it again), the timeline is then in memory.
func (l *Local) passOver(err error) {
	if l.tl == nil { // lost while it was being replaced
		l.note("%s %s: passed over, answering from every event folded in memory", TimelineFile, why(err))
		return
	}
	path := filepath.Join(l.dir, TimelineFile)
	if errors.Is(err, events.ErrDamaged) {
		rerr := os.Remove(path) // while its lock is held
		l.tl.Close()
		if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			l.note("%s %s: passed over, answering from every event folded in memory; removing it failed: %v", TimelineFile, why(err), rerr)
		} else {
			l.note("%s %s: passed over, answering from every event folded in memory; removed it (the next call makes it again)", TimelineFile, why(err))
		}
	} else {
		l.tl.Close()
		l.note("%s %s: passed over, answering from every event folded in memory", TimelineFile, why(err))
	}
	l.tl = nil
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
		keys, err := l.Views.Timeline.TakeKeys()
		if err != nil {
			return err
		}
		if err := l.tl.Flush(keys, l.Runner.Position(), l.Views.Timeline.Ordered()); err != nil {
			return err
		}
		l.flushed = l.Runner.Position()
	}
	if l.flushed != l.From || l.restamp {
		extra, err := l.tl.extra()
		if err == nil {
			err = projections.SaveSnapshotWith(ctx, l.snapPath, l.Runner, l.Views, extra)
		}
		if err != nil {
			l.note("snapshot not saved (%v): the next call folds from position %d", err, l.From)
		}
		l.saved, l.restamp = true, false
	}
	return l.Runner.CatchUpTo(ctx, head)
}

func (l *Local) fresh() {
	l.Views = projections.New()
	l.Runner = projections.NewRunner(l.store, l.reg, l.Views.All()...)
	if l.keeper != nil {
		l.Runner.Keep(l.keeper, l.Views)
	}
}

func (l *Local) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	l.Notes = append(l.Notes, n)
	if l.onNote != nil {
		l.onNote(n)
	}
}

// load resumes from the snapshot if it agrees with timeline.db, and
// otherwise empties timeline.db to fold from 0. timeline.db's errors wrap
// ErrTimelineDB.
func (l *Local) load(ctx context.Context) error {
	pos, extra, err := projections.LoadSnapshotWith(ctx, l.snapPath, l.Runner, l.Views)
	switch {
	case err == nil:
		at, err := l.trusted(ctx, extra)
		switch {
		case err != nil:
			return err
		case at == pos:
			return nil
		case l.tl.Replaced != nil:
			// Replaced, and said so: at 0.
		case l.tl.Made:
			l.note("no timeline index in %s beside the snapshot at position %d: rebuilding both from position 0", l.dir, pos)
		default:
			l.note("snapshot at position %d and timeline index at %d disagree: rebuilding both", pos, at)
		}
		l.fresh()
	case errors.Is(err, os.ErrNotExist):
		l.missing = true
	case errors.Is(err, events.ErrDamaged):
		if rerr := os.Remove(l.snapPath); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			l.note("%v: ignored, folding from position 0 (removing it failed: %v)", err, rerr)
		} else {
			l.note("%v: removed it, folding from position 0", err)
		}
		l.fresh()
	case errors.Is(err, projections.ErrSnapshot):
		l.note("%v: ignored, folding from position 0", err)
		l.fresh()
	default:
		return err
	}
	return l.emptyTimeline(ctx)
}

// trusted is the position of timeline.db, which the snapshot that extra
// came with agrees with unless it was changed since: a file stamped as
// extra says is used as it is, any other is checked whole first (see
// check.go), and one that fails is replaced (at position 0).
func (l *Local) trusted(ctx context.Context, extra []byte) (uint64, error) {
	if l.tl.Made || l.tl.stamped(extra) {
		return l.tl.Position()
	}
	w, err := l.tl.checkWhole(ctx)
	switch {
	case errors.Is(err, events.ErrDamaged):
		if l.tl, err = l.tl.replace(err); err != nil {
			return 0, err
		}
		l.note("%s %s: removed it, and made it again from the event store", TimelineFile, why(l.tl.Replaced))
		return 0, nil
	case err != nil:
		return 0, err
	}
	l.restamp = true // sound: stamp it, so the next call need not check it
	return w.Position, nil
}

// emptyTimeline makes timeline.db empty, for a fold from 0 with no
// snapshot to say what it holds: one this call made is; a small one is
// checked whole and kept if it holds nothing; any other is replaced.
func (l *Local) emptyTimeline(ctx context.Context) error {
	if l.tl.Made {
		return nil
	}
	if l.tl.f.Check.InUse <= smallFile {
		w, err := l.tl.checkWhole(ctx)
		if err == nil && w.Position == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, events.ErrDamaged) {
			return err
		}
		if err != nil {
			l.note("%s %s: removed it, and made it again from the event store", TimelineFile, why(err))
		}
	}
	var err error
	l.tl, err = l.tl.Replace()
	return err
}

// Timeline is Timeline.Query's answer, churn marks included: the entries
// to the position timeline.db holds from it, those after from memory. If
// timeline.db fails (damage found while reading it), it is passed over with
// a note, and this and every later answer come from the whole history
// folded in memory.
func (l *Local) Timeline(f projections.Filter) ([]projections.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.full != nil {
		return l.fromFull(f)
	}
	if l.tl == nil {
		return l.Views.Timeline.Query(f), nil
	}
	es, err := l.fromDisk(f)
	if err == nil {
		return es, nil
	}
	l.passOver(err)
	l.full = &fold{set: projections.New()}
	l.full.r = projections.NewRunner(l.store, l.reg, l.full.set.All()...)
	return l.fromFull(f)
}

// fromFull answers f from the whole history, folded to where the Local's
// own runner is.
func (l *Local) fromFull(f projections.Filter) ([]projections.Entry, error) {
	if err := l.full.r.CatchUpTo(context.Background(), l.Runner.Position()); err != nil {
		return nil, err
	}
	return l.full.set.Timeline.Query(f), nil
}

// fromDisk is Timeline's answer from timeline.db and memory.
func (l *Local) fromDisk(f projections.Filter) ([]projections.Entry, error) {
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
		es, err := l.tl.Query(context.Background(), Source{Store: l.store, Reg: l.reg}, g)
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
	err := l.tl.Close()
	l.tl = nil
	return err
}

// Save writes set, folded by r from position 0 to its position (every
// projection), as dir's cache: timeline.db made anew (the old one removed
// under its lock, whatever state it was in) with the timeline's entries,
// then the snapshot at the same position, stamped with it (the order Open
// writes them in, and checks). mesh rebuild saves its rebuild so.
func Save(ctx context.Context, dir string, r *projections.Runner, set *projections.Set) (err error) {
	path := filepath.Join(dir, TimelineFile)
	tl, err := OpenTimelineDB(path)
	if err != nil {
		return err
	}
	if !tl.Made {
		if tl, err = tl.Replace(); err != nil {
			return err
		}
	}
	defer func() { err = errors.Join(err, tl.Close()) }()
	keys, err := set.Timeline.TakeKeys()
	if err != nil {
		return err
	}
	if err := tl.Flush(keys, r.Position(), set.Timeline.Ordered()); err != nil {
		return err
	}
	extra, err := tl.extra()
	if err != nil {
		return err
	}
	return projections.SaveSnapshotWith(ctx, filepath.Join(dir, SnapshotFile), r, set, extra)
}
