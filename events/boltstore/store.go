package boltstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"meshplane/events"
)

// ErrLocked means the file is held by another process, or by another open
// Store in this process. Open returns it wrapped, with the file's name.
var ErrLocked = errors.New("file is locked by another process")

// DefaultLockTimeout is how long Open waits for the file lock by default.
const DefaultLockTimeout = 100 * time.Millisecond

// Option configures Open.
type Option func(*config)

type config struct {
	now         func() time.Time
	lockTimeout time.Duration
}

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
	db   *bolt.DB
	path string
	now  func() time.Time

	head   atomic.Uint64 // last committed position; written by the writer only
	sig    *events.Signal
	closed atomic.Bool

	reqs       chan *request // to the writer
	quit       chan struct{} // closed by Close: the writer fails what is queued
	writerDone chan struct{} // closed when the writer has returned
	closeOnce  sync.Once
	closeErr   error
}

var _ events.Store = (*Store)(nil)

// queueSize bounds the requests waiting for the writer; Append blocks (or
// honours its ctx) while it is full.
const queueSize = 1024

// Open opens (creating if needed) the store in the bbolt file at path.
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
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: cfg.lockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("boltstore: open %s: %w (gave up after %v; is another meshplane using it?)",
			path, ErrLocked, cfg.lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	var head uint64
	if err := db.Update(func(tx *bolt.Tx) error {
		head, err = initLayout(tx)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	s := &Store{
		db:         db,
		path:       path,
		now:        cfg.now,
		sig:        events.NewSignal(),
		reqs:       make(chan *request, queueSize),
		quit:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	s.head.Store(head)
	go s.writeLoop()
	return s, nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close stops the writer (requests still queued fail with ErrClosed; a
// group already committing completes), closes the file and wakes every
// subscriber. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.quit)
		<-s.writerDone
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("boltstore: close %s: %w", s.path, err)
		}
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
	err := s.db.View(fn)
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
	var out []events.Event
	err := s.view(func(tx *bolt.Tx) error {
		head, ok := u64val(tx.Bucket(bucketMeta).Get(metaHead))
		if !ok {
			return fmt.Errorf("corrupt: meta head missing or malformed")
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
		want := after + 1
		for k, v := c.Seek(u64key(want)); k != nil && uint64(len(out)) < n; k, v = c.Next() {
			if len(out)%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			e, err := decodeAt(k, v, want)
			if err != nil {
				return err
			}
			out = append(out, e)
			want++
		}
		if uint64(len(out)) != n {
			return fmt.Errorf("corrupt: head is %d but events end at position %d", head, want-1)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: read all after %d: %w", after, err)
	}
	return out, nil
}

// decodeAt decodes the record v stored under key k, which must be position
// want, and checks that the record agrees.
func decodeAt(k, v []byte, want uint64) (events.Event, error) {
	pos, ok := u64val(k)
	if !ok || pos != want {
		return events.Event{}, fmt.Errorf("corrupt: expected position %d, found key %x", want, k)
	}
	e, err := events.DecodeRecord(v)
	if err != nil {
		return events.Event{}, fmt.Errorf("position %d: %w", pos, err)
	}
	if e.Position != pos {
		return events.Event{}, fmt.Errorf("corrupt: record at position %d says position %d", pos, e.Position)
	}
	return e, nil
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
	var out []events.Event
	err := s.view(func(tx *bolt.Tx) error {
		sb := tx.Bucket(bucketStreams).Bucket([]byte(stream))
		if sb == nil {
			return nil
		}
		evb := tx.Bucket(bucketEvents)
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
				return fmt.Errorf("corrupt: expected version %d, found key %x", want, k)
			}
			pos, ok := u64val(v)
			if !ok {
				return fmt.Errorf("corrupt: version %d points at %x", ver, v)
			}
			rec := evb.Get(v)
			if rec == nil {
				return fmt.Errorf("corrupt: version %d points at position %d, which is not stored", ver, pos)
			}
			e, err := decodeAt(v, rec, pos)
			if err != nil {
				return err
			}
			if e.Stream != stream || e.Version != ver {
				return fmt.Errorf("corrupt: version %d points at position %d, which holds %s", ver, pos, e)
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
