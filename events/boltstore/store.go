package boltstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"meshplane/events"
	"meshplane/events/internal/groupcommit"
	"meshplane/internal/crcframe"
)

// ErrLocked means the file is held by another process, or by another open
// Store in this process. Open returns it wrapped, with the file's name.
var ErrLocked = errors.New("file is locked by another process")

// errNeedsWrite is what a background walker's Open finds when the file must
// be changed before it is used: it then walks the file first.
var errNeedsWrite = errors.New("the file needs a write to open")

// ErrReadOnly means an Append on a store opened with ReadOnly. Nothing was
// written.
var ErrReadOnly = errors.New("store opened read-only")

// Damage found in the file is an error wrapping events.ErrDamaged, from
// Open and from every read and write: a record whose checksum fails, an index
// that disagrees with the records, a file truncated or scribbled on so that
// bbolt cannot read it (its panics are recovered at this package's boundary
// and a fault in its memory map is turned into one), or an empty file.

// DefaultLockTimeout is how long Open waits for the file lock by default.
const DefaultLockTimeout = 100 * time.Millisecond

// Option configures Open.
type Option func(*config)

type config struct {
	now         func() time.Time
	lockTimeout time.Duration
	readOnly    bool
	background  bool
}

// ReadOnly opens the file read-only: with a shared lock, so any number of
// read-only stores (in any process) may hold it at once, but none while a
// writing one does. It never creates or modifies the file: a missing file is
// an error wrapping os.ErrNotExist, and Append fails with ErrReadOnly.
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }

// WalkInBackground makes a writing Open walk the file's structure in the
// background instead of before it returns: the walk of every page reads
// the whole file (about a minute for the 27 GB of 30 days of 10,000 nodes,
// read cold), which a restart that resumes from a checkpoint would
// otherwise wait for. Until the walk has passed, reads walk what they reach
// first, as a read-only store's do (walktail.go), and nothing is written:
// the first commit waits for the walk (bbolt's freelist is trusted only
// once every page is known to be reached once). Damage the walk finds
// fails that commit and every one after it, and is what Walked returns.
// Ignored with ReadOnly, and for a file Open must change (created, or a
// layout to upgrade), which is walked first as ever.
func WalkInBackground() Option { return func(c *config) { c.background = true } }

// WithClock sets the clock that stamps events appended with a zero At
// (time.Now by default).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithLockTimeout sets how long Open waits for the file lock before it fails
// with ErrLocked. It must be positive: waiting forever is not offered.
func WithLockTimeout(d time.Duration) Option { return func(c *config) { c.lockTimeout = d } }

// Store is an events.Store in one bbolt file. It is safe for concurrent
// use. All writes go through one writer goroutine (see the package doc);
// reads run in bbolt read transactions, concurrently with it.
type Store struct {
	db       *bolt.DB
	path     string
	now      func() time.Time
	readOnly bool
	// checked says every record is format 3, with its checksum (layout 2);
	// in a layout-1 file, records written before the checksum are format 1.
	checked bool
	// chainStart is the first chained position (layout 3); 0 when the file
	// is not chained (layout 1, or layout 2 opened read-only).
	chainStart uint64
	// broken is set when bbolt panicked inside a write transaction: its
	// locks may be held, so the file is not touched again (see guard).
	broken atomic.Pointer[error]
	// lazy, on a read-only store, walks the parts of the file a read
	// reaches before it reads them (walktail.go); on a writer opened with
	// WalkInBackground too, until its walk of the whole file has passed;
	// nil on another writer, whose Open walked the whole file.
	lazy *lazyCheck
	// namesChecked is set once checkStreamNames has passed.
	namesChecked atomic.Bool

	head   atomic.Uint64 // last committed position; written by the writer only
	sig    *events.Signal
	closed atomic.Bool

	commits   *groupcommit.Committer // the writer; nil on a read-only store
	closeOnce sync.Once
	closeErr  error
}

var _ events.Store = (*Store)(nil)

// Open opens (creating if needed, unless ReadOnly) the store in the bbolt
// file at path. An existing file is checked before it is used: its bbolt
// structure (every page reachable is in the file, once), its layout, and its
// head; damage is an error wrapping events.ErrDamaged. An empty file is
// damage too: it is never initialised over.
func Open(path string, opts ...Option) (*Store, error) {
	cfg := config{now: time.Now, lockTimeout: DefaultLockTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lockTimeout <= 0 {
		return nil, fmt.Errorf("boltstore: open %s: lock timeout must be positive, is %v", path, cfg.lockTimeout)
	}
	if cfg.now == nil {
		return nil, fmt.Errorf("boltstore: open %s: clock is nil", path)
	}
	db, lazy, err := openBolt(path, cfg)
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	var head, layout, start uint64
	walking := false // a writer whose walk goes on in the background: Open read what it needs
	if lazy != nil && !cfg.readOnly {
		// A writer walking in the background changes nothing before the
		// walk has passed: a file that needs changing is walked now.
		err = guard(func() error {
			return db.View(func(tx *bolt.Tx) error {
				if tx.Bucket(bucketMeta) == nil {
					return errNeedsWrite
				}
				if layout, head, err = checkLayout(tx); err != nil || layout == layoutChecksummed {
					return cmp.Or(err, errNeedsWrite)
				}
				start, err = chainStart(tx, layout)
				return err
			})
		})
		switch {
		case err == nil:
			lazy.walkInBackground()
			walking = true
		case errors.Is(err, errNeedsWrite):
			err = lazy.all()
		}
		if err != nil {
			closeBolt(db)
			lazy.close()
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
	}
	err = guard(func() error {
		if walking {
			return nil // read above
		}
		if cfg.readOnly {
			return db.View(func(tx *bolt.Tx) error {
				if layout, head, err = checkLayout(tx); err != nil {
					return err
				}
				start, err = chainStart(tx, layout)
				return err
			})
		}
		return db.Update(func(tx *bolt.Tx) error {
			if layout, head, err = initLayout(tx); err != nil {
				return err
			}
			if layout, err = upgradeLayout(tx, layout, head); err != nil {
				return err
			}
			start, err = chainStart(tx, layout)
			return err
		})
	})
	if err != nil {
		closeBolt(db)
		lazy.close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	s := &Store{
		lazy:       lazy,
		db:         db,
		path:       path,
		now:        cfg.now,
		readOnly:   cfg.readOnly,
		checked:    layout >= layoutChecksummed,
		chainStart: start,
		sig:        events.NewSignal(),
	}
	s.head.Store(head)
	if !cfg.readOnly {
		if err := s.startWriter(); err != nil {
			closeBolt(db)
			lazy.close()
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
	}
	return s, nil
}

// openBolt opens the bbolt file and checks its structure (walkPages), so
// that no page bbolt reads later lies outside the file or loops. Read-only,
// it checks only what Open reads (walkBounded) and returns what checks the
// rest as reads need it.
func openBolt(path string, cfg config) (*bolt.DB, *lazyCheck, error) {
	fi, err := os.Stat(path)
	existed := err == nil && fi.Size() > 0
	switch {
	case err == nil && fi.Size() == 0:
		return nil, nil, fmt.Errorf("%w: the file is empty (0 bytes); it is not initialised over", events.ErrDamaged)
	case err == nil && !fi.Mode().IsRegular():
		return nil, nil, fmt.Errorf("not a regular file (%s)", fi.Mode())
	case err != nil && (cfg.readOnly || !errors.Is(err, os.ErrNotExist)):
		return nil, nil, err
	}
	var db *bolt.DB
	err = guard(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: cfg.lockTimeout, ReadOnly: cfg.readOnly})
		return err
	})
	var pathErr *os.PathError
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, nil, fmt.Errorf("%w (gave up after %v; is another meshplane using it?)", ErrLocked, cfg.lockTimeout)
	case errors.Is(err, events.ErrDamaged), errors.As(err, &pathErr):
		return nil, nil, err // damage found by guard; or the file cannot be opened or locked
	case err != nil:
		// bbolt's refusals of what it read: no valid meta page, a
		// file too small, a version it does not know.
		return nil, nil, fmt.Errorf("%w: bbolt cannot read it: %w", events.ErrDamaged, err)
	}
	if cfg.readOnly || cfg.background && existed {
		lazy, err := checkBounded(db, path)
		if err != nil {
			closeBolt(db)
			return nil, nil, err
		}
		return db, lazy, nil
	}
	if _, err := checkStructure(db, path); err != nil {
		closeBolt(db)
		return nil, nil, err
	}
	return db, nil, nil
}

// checkStructure walks the pages of db's file (see walkPages), with the meta
// bbolt itself reads, and returns how many pages it read. Damage is an error
// wrapping events.ErrDamaged.
func checkStructure(db *bolt.DB, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, meta, err := metaOf(db, f)
	if err != nil {
		return 0, err
	}
	n, err := walkPages(f, size, int(meta.pageSize), meta)
	if err != nil {
		return n, fmt.Errorf("%w: %w", events.ErrDamaged, err)
	}
	return n, nil
}

// checkBounded is checkStructure for a read-only store: it walks what Open
// reads (walkBounded), and returns the check of the rest, which keeps the
// file open.
func checkBounded(db *bolt.DB, path string) (*lazyCheck, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	size, meta, err := metaOf(db, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	root, chain, _, err := walkBounded(f, size, int(meta.pageSize), meta)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %w", events.ErrDamaged, err)
	}
	l := &lazyCheck{f: f, size: size, pageSize: int(meta.pageSize), meta: meta, events: root, chain: chain}
	l.from.Store(math.MaxUint64)
	if root == 0 { // events is inline (walked) or missing (refused by checkLayout)
		l.from.Store(0)
	}
	return l, nil
}

// metaOf returns the size of db's file f and the meta bbolt reads, checked
// against what bbolt says it reads. Damage is an error wrapping
// events.ErrDamaged.
func metaOf(db *bolt.DB, f *os.File) (int64, boltMeta, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, boltMeta{}, err
	}
	pageSize := db.Info().PageSize
	meta, err := chooseMeta(f, pageSize)
	if err != nil {
		return 0, boltMeta{}, fmt.Errorf("%w: %w", events.ErrDamaged, err)
	}
	var txid int
	var size int64
	if err := guard(func() error {
		return db.View(func(tx *bolt.Tx) error { txid, size = tx.ID(), tx.Size(); return nil })
	}); err != nil {
		return 0, boltMeta{}, err
	}
	if uint64(txid) != meta.txid || uint64(size) != meta.hwm*uint64(pageSize) {
		return 0, boltMeta{}, fmt.Errorf("%w: bbolt reads transaction %d of %d bytes, the meta pages say %d of %d",
			events.ErrDamaged, txid, size, meta.txid, meta.hwm*uint64(pageSize))
	}
	if int(meta.pageSize) != pageSize {
		return 0, boltMeta{}, fmt.Errorf("%w: page size %d (meta says %d)", events.ErrDamaged, pageSize, meta.pageSize)
	}
	return fi.Size(), meta, nil
}

// closeBolt closes db after Open failed; a panic while closing a damaged
// file is dropped, since Open's error already says what is wrong.
func closeBolt(db *bolt.DB) { _ = guard(db.Close) }

// guard runs fn, which calls into bbolt, at this package's boundary: bbolt
// trusts the file it maps, so a damaged file makes it panic, or fault on a
// page past the end of the file. A fault is made a panic (for this goroutine,
// while fn runs: debug.SetPanicOnFault), and a panic an error wrapping
// events.ErrDamaged and errPanicked.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading the file panicked: %v: %w", events.ErrDamaged, r, errPanicked)
		}
	}()
	return fn()
}

// errPanicked marks an error made by guard from a panic.
var errPanicked = errors.New("bbolt gave up on the file")

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close stops the writer (requests still queued fail with ErrClosed; a
// group already committing completes), closes the file and wakes every
// subscriber. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.commits != nil {
			s.commits.Close()
		}
		if b := s.broken.Load(); b != nil {
			// bbolt panicked in a write and may hold its own locks:
			// closing could block forever. The process's exit frees
			// the file.
			s.closeErr = fmt.Errorf("boltstore: close %s: left open after %w", s.path, *b)
		} else if err := guard(s.db.Close); err != nil {
			s.closeErr = fmt.Errorf("boltstore: close %s: %w", s.path, err)
		}
		s.lazy.close()
		s.sig.Close()
	})
	return s.closeErr
}

// check returns the error a call must fail with before it starts, if any.
func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return events.ErrClosed
	}
	return ctx.Err()
}

// view runs fn in a read transaction, mapping a closed database to ErrClosed.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	if b := s.broken.Load(); b != nil {
		return *b
	}
	err := guard(func() error { return s.db.View(fn) })
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return events.ErrClosed
	}
	return err
}

// Head returns the position of the last committed event.
func (s *Store) Head(ctx context.Context) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, fmt.Errorf("boltstore: head: %w", err)
	}
	return s.head.Load(), nil
}

// ctxCheckEvery is how many events a read decodes between checks of its ctx.
const ctxCheckEvery = 4096

// ReadAll returns the events after position after, in position order, at
// most limit of them (limit <= 0: all).
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("boltstore: read all after %d: %w", after, err)
	}
	if head := s.head.Load(); s.lazy != nil && after < head {
		var err error
		if limit > 0 && uint64(limit) < head-after {
			// The cursor reads one key past the last it returns.
			err = s.lazy.eventsBetween(after+1, after+uint64(limit)+1)
		} else {
			err = s.lazy.eventsFrom(after + 1)
		}
		if err != nil {
			return nil, fmt.Errorf("boltstore: read all after %d: %w", after, err)
		}
	}
	var out []events.Event
	err := s.view(func(tx *bolt.Tx) error {
		head, ok := u64val(tx.Bucket(bucketMeta).Get(metaHead))
		if !ok {
			return damagedf("meta head missing or malformed")
		}
		if head <= after {
			return nil
		}
		n := head - after
		if limit > 0 && uint64(limit) < n {
			n = uint64(limit)
		}
		out = make([]events.Event, 0, n)
		c := tx.Bucket(bucketEvents).Cursor()
		chain := tx.Bucket(bucketChain)
		want := after + 1
		for k, v := c.Seek(u64key(want)); k != nil && uint64(len(out)) < n; k, v = c.Next() {
			if len(out)%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			e, err := s.decodeAt(k, v, want)
			if err != nil {
				return err
			}
			if e.Chain, err = s.chainAt(chain, want); err != nil {
				return err
			}
			out = append(out, e)
			want++
		}
		if uint64(len(out)) != n {
			return damagedf("head is %d but events end at position %d", head, want-1)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: read all after %d: %w", after, err)
	}
	return out, nil
}

// decodeAt decodes the record v stored under key k, which must be position
// want, and checks that the record agrees: its checksum (DecodeRecord), its
// format (a layout-2 file holds only checksummed records) and its position.
func (s *Store) decodeAt(k, v []byte, want uint64) (events.Event, error) {
	pos, ok := u64val(k)
	if !ok || pos != want {
		return events.Event{}, damagedf("expected position %d, found key %x", want, k)
	}
	if f := events.RecordFormat(v); s.checked && f != events.RecordFormatChecked {
		return events.Event{}, damagedf("record at position %d is format %d, in a file whose records all carry a checksum (format %d)",
			pos, f, events.RecordFormatChecked)
	}
	e, err := events.DecodeRecord(v)
	if err != nil {
		return events.Event{}, fmt.Errorf("record at position %d: %w", pos, err)
	}
	if e.Position != pos {
		return events.Event{}, damagedf("record at position %d says position %d", pos, e.Position)
	}
	return e, nil
}

// chainAt returns the chain value of position pos from the chain bucket b
// (nil in a file that has none): zero before the chain starts, and damage
// if it is missing, malformed or fails its checksum after.
func (s *Store) chainAt(b *bolt.Bucket, pos uint64) (events.Hash, error) {
	var h events.Hash
	if s.chainStart == 0 || pos < s.chainStart {
		return h, nil
	}
	if b == nil {
		return h, damagedf("bucket %s missing", bucketChain)
	}
	v := b.Get(u64key(pos))
	if len(v) != chainValueSize {
		return h, damagedf("position %d: chain value is %d bytes, want %d (the chain starts at position %d)", pos, len(v), chainValueSize, s.chainStart)
	}
	copy(h[:], v)
	if want := binary.BigEndian.Uint32(v[len(h):]); chainCRC(pos, h) != want {
		return events.Hash{}, damagedf("position %d: chain value fails its checksum", pos)
	}
	return h, nil
}

// chainValueSize is a chain bucket value's: the hash, then a CRC-32C of the
// position (8 bytes, big-endian) and the hash.
const chainValueSize = len(events.Hash{}) + 4

// chainCRC is the checksum of the chain value h of position pos.
func chainCRC(pos uint64, h events.Hash) uint32 {
	var b [8 + len(events.Hash{})]byte
	binary.BigEndian.PutUint64(b[:8], pos)
	copy(b[8:], h[:])
	return crc32.Checksum(b[:], crcframe.Table)
}

// appendChainValue appends the chain bucket's value for h at pos.
func appendChainValue(b []byte, pos uint64, h events.Hash) []byte {
	return binary.BigEndian.AppendUint32(append(b, h[:]...), chainCRC(pos, h))
}

// ChainHead implements events.Store: the head, its chain value and its
// event's time, read in one transaction.
func (s *Store) ChainHead(ctx context.Context) (events.ChainHead, error) {
	if err := s.check(ctx); err != nil {
		return events.ChainHead{}, fmt.Errorf("boltstore: chain head: %w", err)
	}
	evs, err := s.ReadAll(ctx, max(s.head.Load(), 1)-1, 1)
	if err != nil {
		return events.ChainHead{}, fmt.Errorf("boltstore: chain head: %w", err)
	}
	if len(evs) == 0 {
		return events.ChainHead{}, nil
	}
	// A commit between the Load and the read: the head read is still one
	// the store held, and a later call sees the newer.
	e := evs[len(evs)-1]
	return events.ChainHead{Position: e.Position, Chain: e.Chain, At: e.At}, nil
}

// checkStreamNames checks that each stream bucket's name is the stream of
// its first record. A bucket name is a bbolt key, which no checksum of ours
// covers: a damaged one would make its stream read as absent (and then be
// started again from version 1). So an answer of "no such stream" is given
// only after this check. It reads one record per stream, once per Store:
// after it has passed, every bucket is either checked or made by this Store
// (no other process writes the file while it is open).
func (s *Store) checkStreamNames(tx *bolt.Tx) error {
	if s.namesChecked.Load() {
		return nil
	}
	evb := tx.Bucket(bucketEvents)
	c := tx.Bucket(bucketStreams).Cursor()
	for name, v := c.First(); name != nil; name, v = c.Next() {
		if v != nil {
			return damagedf("streams: key %q is not a bucket", name)
		}
		k, pos := tx.Bucket(bucketStreams).Bucket(name).Cursor().First()
		if k == nil {
			return damagedf("stream %q: empty bucket", name)
		}
		p, ok := u64val(pos)
		if !ok {
			return damagedf("stream %q: first version points at %x", name, pos)
		}
		e, err := s.decodeAt(pos, evb.Get(pos), p)
		if err != nil {
			return fmt.Errorf("stream %q: %w", name, err)
		}
		if e.Stream != string(name) {
			return damagedf("stream bucket %q holds the records of stream %s (position %d)", name, e.Stream, p)
		}
	}
	s.namesChecked.Store(true)
	return nil
}

// streamVersion returns the version of the stream whose bucket is sb: its
// last key, which must agree with the bucket's sequence, where the writer
// keeps it too. A damaged page of the stream's bucket (a count cut short
// loses its last versions) is caught by the two disagreeing. Buckets of a
// layout-1 file not appended to since have sequence 0, and are not checked.
func (s *Store) streamVersion(sb *bolt.Bucket, stream string) (uint64, error) {
	var last uint64
	if k, _ := sb.Cursor().Last(); k != nil {
		var ok bool
		if last, ok = u64val(k); !ok {
			return 0, damagedf("stream %s: key %x is not 8 bytes", stream, k)
		}
	}
	if seq := sb.Sequence(); seq != last && (s.checked || seq != 0) {
		return 0, damagedf("stream %s: last version is %d, its bucket says %d", stream, last, seq)
	}
	return last, nil
}

// damagedf is an error wrapping events.ErrDamaged.
func damagedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", events.ErrDamaged, fmt.Sprintf(format, args...))
}

// ReadStream returns the events of stream after version after, in version
// order, at most limit of them (limit <= 0: all).
func (s *Store) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("boltstore: read %s after %d: %w", stream, after, err)
	}
	if err := events.ValidateStream(stream); err != nil {
		return nil, fmt.Errorf("boltstore: read %q: %w", stream, err)
	}
	if s.lazy != nil {
		if err := s.lazy.all(); err != nil {
			return nil, fmt.Errorf("boltstore: read %s after %d: %w", stream, after, err)
		}
	}
	var out []events.Event
	err := s.view(func(tx *bolt.Tx) error {
		sb := tx.Bucket(bucketStreams).Bucket([]byte(stream))
		if sb == nil {
			// Absent, unless damage renamed its bucket.
			return s.checkStreamNames(tx)
		}
		if _, err := s.streamVersion(sb, stream); err != nil {
			return err
		}
		evb, chain := tx.Bucket(bucketEvents), tx.Bucket(bucketChain)
		c := sb.Cursor()
		want := after + 1
		for k, v := c.Seek(u64key(want)); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			if len(out)%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			ver, ok := u64val(k)
			if !ok || ver != want {
				return damagedf("stream %s: expected version %d, found key %x", stream, want, k)
			}
			pos, ok := u64val(v)
			if !ok {
				return damagedf("stream %s: version %d points at %x", stream, ver, v)
			}
			rec := evb.Get(v)
			if rec == nil {
				return damagedf("stream %s: version %d points at position %d, which is not stored", stream, ver, pos)
			}
			e, err := s.decodeAt(v, rec, pos)
			if err != nil {
				return fmt.Errorf("stream %s version %d: %w", stream, ver, err)
			}
			if e.Stream != stream || e.Version != ver {
				return damagedf("stream %s: version %d points at position %d, which holds %s", stream, ver, pos, e)
			}
			if e.Chain, err = s.chainAt(chain, pos); err != nil {
				return err
			}
			out = append(out, e)
			want++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: read %s after %d: %w", stream, after, err)
	}
	return out, nil
}

// Subscribe delivers every event after position after to fn, then each new
// one as it is committed (see events.Store).
func (s *Store) Subscribe(ctx context.Context, after uint64, fn func(events.Event) error) error {
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("boltstore: subscribe after %d: %w", after, err)
	}
	return events.Follow(ctx, after, s.ReadAll, s.sig, fn)
}

// Walked waits for the walk of the whole file a WalkInBackground Open
// started, and returns its verdict: nil when it passed (or when Open
// walked the file itself), damage wrapping events.ErrDamaged, or ctx's
// error if ctx ends first. A daemon stops on damage rather than serve a
// store it cannot write.
func (s *Store) Walked(ctx context.Context) error {
	l := s.lazy
	if s.readOnly || l == nil || l.bg == nil {
		return nil
	}
	select {
	case <-l.bg:
		if l.bgErr != nil {
			return fmt.Errorf("boltstore: walk of %s: %w", s.path, l.bgErr)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
