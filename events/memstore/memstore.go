// Package memstore is an in-memory events.Store: the store of tests,
// scenario runs and benchmarks that replay large histories.
//
// It keeps one slice of events in position order (the event at position p is
// at index p-1), one list of positions per stream, and an index of ids. An
// append is validated by events.Prepare before the lock is taken, then
// checked (ids, expected version) and committed under the lock, so a refused
// append changes nothing.
//
// Invariants:
//   - Stored events are never modified once appended, and nothing outside
//     the store holds a reference to their Data: Append copies Data in,
//     reads copy it out (one buffer per page, so ReadAll costs two
//     allocations whatever the page size).
//   - log[i].Chain is the chain value of log[i] following log[i-1]'s
//     (events' chain.go), computed under the lock that assigns its
//     position; the chain starts at position 1.
//   - log[i].Position == i+1; streams[s][v-1] is the position of version v
//     of stream s; ids[id] is the position of the event with that id.
//
// A Store has no package-level state: every clock and fault hook is passed
// to New, so many stores can run side by side in one process.
package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

var _ events.Store = (*Store)(nil)

// Op names a store operation, as passed to a Fault hook.
type Op string

// The operations a Fault hook sees.
const (
	OpAppend     Op = "append"
	OpReadStream Op = "read-stream"
	OpReadAll    Op = "read-all"
	OpSubscribe  Op = "subscribe"
	OpHead       Op = "head"
)

// Fault is consulted at the start of every operation, with the stream it
// concerns ("" for ReadAll, Subscribe and Head). A non-nil error fails the
// operation, wrapped with its context, before anything is read or written.
// It is how scenario runs make "the store fails reads of node g14"; it may be
// called concurrently, and may change its answer from one call to the next.
// Subscribe consults it once, when it starts.
type Fault func(op Op, stream string) error

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that dates events appended with a zero At
// (time.Now by default).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithFault installs a fault-injection hook (none by default).
func WithFault(f Fault) Option { return func(s *Store) { s.fault = f } }

// Store is an in-memory event store. It is safe for concurrent use. The zero
// value is not usable; use New.
type Store struct {
	now   func() time.Time
	fault Fault
	sig   *events.Signal

	mu      sync.RWMutex
	closed  bool
	log     []events.Event       // position p at index p-1
	streams map[string][]uint64  // stream -> positions, version v at index v-1
	ids     map[uuid.UUID]uint64 // id -> position
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:     time.Now,
		sig:     events.NewSignal(),
		streams: map[string][]uint64{},
		ids:     map[uuid.UUID]uint64{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// check is the common preamble of every operation: closed store, done
// context, injected fault.
func (s *Store) check(ctx context.Context, op Op, stream string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return events.ErrClosed
	}
	if s.fault != nil {
		if err := s.fault(op, stream); err != nil {
			return err
		}
	}
	return nil
}

// Append implements events.Store.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	if err := s.check(ctx, OpAppend, stream); err != nil {
		return nil, fmt.Errorf("memstore: append %s: %w", stream, err)
	}
	if !expected.Valid() {
		return nil, fmt.Errorf("memstore: append %s: %w", stream,
			&events.InvalidError{Field: "expected", Reason: expected.String()})
	}
	out, err := events.Prepare(stream, evs, s.now())
	if err != nil {
		return nil, fmt.Errorf("memstore: append %s: %w", stream, err)
	}
	// The store's own copies, with one buffer for the batch's data.
	stored := make([]events.Event, len(out))
	copy(stored, out)
	cloneData(stored)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("memstore: append %s: %w", stream, events.ErrClosed)
	}
	if done, err := s.replayed(out); done || err != nil {
		s.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("memstore: append %s: %w", stream, err)
		}
		return out, nil
	}
	positions := s.streams[stream]
	version := uint64(len(positions))
	if !expected.Check(version) {
		s.mu.Unlock()
		return nil, fmt.Errorf("memstore: append %s: %w", stream,
			&events.VersionError{Stream: stream, Expected: expected, Actual: version})
	}
	for i := range stored {
		version++
		pos := uint64(len(s.log)) + 1
		stored[i].Version, stored[i].Position = version, pos
		stored[i].Chain = events.ChainOf(s.chainLocked(), stored[i])
		out[i].Version, out[i].Position, out[i].Chain = version, pos, stored[i].Chain
		s.log = append(s.log, stored[i])
		positions = append(positions, pos)
		s.ids[stored[i].ID] = pos
	}
	s.streams[stream] = positions
	s.mu.Unlock()
	s.sig.Notify()
	return out, nil
}

// replayed decides an append's ids, under the lock, by events.AlreadyStored. If
// the append replays stored events it fills evs with their versions and
// positions and reports done.
func (s *Store) replayed(evs []events.Event) (done bool, err error) {
	var stored []events.Event // nil while no id is stored: the usual append
	for i, e := range evs {
		if pos, ok := s.ids[e.ID]; ok {
			if stored == nil {
				stored = make([]events.Event, len(evs))
			}
			stored[i] = s.log[pos-1]
		}
	}
	if done, err = events.AlreadyStored(evs, stored); done {
		for i := range evs {
			evs[i].Version, evs[i].Position, evs[i].Chain = stored[i].Version, stored[i].Position, stored[i].Chain
		}
	}
	return done, err
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	if err := events.ValidateStream(stream); err != nil {
		return nil, fmt.Errorf("memstore: read %s: %w", stream, err)
	}
	if err := s.check(ctx, OpReadStream, stream); err != nil {
		return nil, fmt.Errorf("memstore: read %s: %w", stream, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("memstore: read %s: %w", stream, events.ErrClosed)
	}
	positions := s.streams[stream]
	if after >= uint64(len(positions)) {
		return nil, nil
	}
	positions = positions[after:]
	if limit > 0 && limit < len(positions) {
		positions = positions[:limit]
	}
	out := make([]events.Event, len(positions))
	for i, p := range positions {
		out[i] = s.log[p-1]
	}
	cloneData(out)
	return out, nil
}

// ReadAll implements events.Store.
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	if err := s.check(ctx, OpReadAll, ""); err != nil {
		return nil, fmt.Errorf("memstore: read all: %w", err)
	}
	return s.readAll(ctx, after, limit)
}

// readAll is ReadAll without the fault hook: Subscribe's reads.
func (s *Store) readAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: read all: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("memstore: read all: %w", events.ErrClosed)
	}
	if after >= uint64(len(s.log)) {
		return nil, nil
	}
	page := s.log[after:]
	if limit > 0 && limit < len(page) {
		page = page[:limit]
	}
	out := make([]events.Event, len(page))
	copy(out, page)
	cloneData(out)
	return out, nil
}

// Subscribe implements events.Store with events.Follow.
func (s *Store) Subscribe(ctx context.Context, after uint64, fn func(events.Event) error) error {
	if err := s.check(ctx, OpSubscribe, ""); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("memstore: subscribe: %w", err)
	}
	read := func(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
		if err := ctx.Err(); err != nil {
			return nil, err // as is: Subscribe returns ctx.Err()
		}
		return s.readAll(ctx, after, limit)
	}
	return events.Follow(ctx, after, read, s.sig, fn)
}

// Head implements events.Store.
func (s *Store) Head(ctx context.Context) (uint64, error) {
	if err := s.check(ctx, OpHead, ""); err != nil {
		return 0, fmt.Errorf("memstore: head: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, fmt.Errorf("memstore: head: %w", events.ErrClosed)
	}
	return uint64(len(s.log)), nil
}

// chainLocked is the chain value of the last stored event (zero when
// empty), under the lock.
func (s *Store) chainLocked() events.Hash {
	if len(s.log) == 0 {
		return events.Hash{}
	}
	return s.log[len(s.log)-1].Chain
}

// ChainHead implements events.Store.
func (s *Store) ChainHead(ctx context.Context) (events.ChainHead, error) {
	if err := s.check(ctx, OpHead, ""); err != nil {
		return events.ChainHead{}, fmt.Errorf("memstore: chain head: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return events.ChainHead{}, fmt.Errorf("memstore: chain head: %w", events.ErrClosed)
	}
	if len(s.log) == 0 {
		return events.ChainHead{}, nil
	}
	e := s.log[len(s.log)-1]
	return events.ChainHead{Position: e.Position, Chain: e.Chain, At: e.At}, nil
}

// Close implements events.Store. It drops the stored events, wakes every
// Subscribe (which then returns ErrClosed), and is harmless to repeat.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.log, s.streams, s.ids = nil, nil, nil
	}
	s.mu.Unlock()
	s.sig.Close()
	return nil
}

// cloneData gives evs' Data one fresh buffer, each event's slice capped so
// that appending to it cannot reach the next.
func cloneData(evs []events.Event) {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	buf := make([]byte, 0, n)
	for i, e := range evs {
		start := len(buf)
		buf = append(buf, e.Data...)
		evs[i].Data = buf[start:len(buf):len(buf)]
	}
}
