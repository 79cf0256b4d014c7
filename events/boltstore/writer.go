package boltstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/internal/safego"
)

// A request is one Append waiting for the writer. Its state moves from
// pending to taken (by the writer, which then answers on done exactly once)
// or to abandoned (by the caller, whose ctx ended first; the writer then
// skips it). So an Append that returns its ctx's error wrote nothing.
type request struct {
	stream   string
	expected events.ExpectedVersion
	evs      []events.Event // prepared: validated, Version and Position zero
	size     int            // bytes it will write, about, to bound and size a group
	state    atomic.Int32
	done     chan result // buffered 1
}

const (
	pending int32 = iota
	taken
	abandoned
)

type result struct {
	evs []events.Event
	err error
}

// Group bounds: the writer stops gathering requests for one commit past
// either. A single request larger than both still commits, alone.
const (
	maxGroupRequests = 4096
	maxGroupBytes    = 32 << 20
)

// Append appends evs to stream if its version satisfies expected (see
// events.Store). If it returns an error of its ctx, nothing was written.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("boltstore: append %s: %w", stream, err)
	}
	if s.readOnly {
		return nil, fmt.Errorf("boltstore: append %s: %w", stream, ErrReadOnly)
	}
	if b := s.broken.Load(); b != nil {
		return nil, fmt.Errorf("boltstore: append %s: %w", stream, *b)
	}
	if !expected.Valid() {
		return nil, fmt.Errorf("boltstore: append %s: %w", stream,
			&events.InvalidError{Field: "expected", Reason: expected.String()})
	}
	prepared, err := events.Prepare(stream, evs, s.now())
	if err != nil {
		return nil, fmt.Errorf("boltstore: append %q: %w", stream, err)
	}
	r := &request{stream: stream, expected: expected, evs: prepared, done: make(chan result, 1)}
	for _, e := range prepared {
		r.size += recordSize(e)
	}
	select {
	case s.reqs <- r:
	case <-s.quit:
		return nil, fmt.Errorf("boltstore: append %s: %w", stream, events.ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("boltstore: append %s: %w", stream, ctx.Err())
	}
	var res result
	select {
	case res = <-r.done:
	case <-s.writerDone:
		res = s.lastWord(r)
	case <-ctx.Done():
		if r.state.CompareAndSwap(pending, abandoned) {
			return nil, fmt.Errorf("boltstore: append %s: %w", stream, ctx.Err())
		}
		// The writer has it: its answer comes within one commit.
		select {
		case res = <-r.done:
		case <-s.writerDone:
			res = s.lastWord(r)
		}
	}
	if res.err != nil {
		return nil, fmt.Errorf("boltstore: append %s: %w", stream, res.err)
	}
	return res.evs, nil
}

// lastWord is r's answer once the writer has returned: the one it gave, or
// ErrClosed if the request was queued too late to be seen.
func (s *Store) lastWord(r *request) result {
	select {
	case res := <-r.done:
		return res
	default:
		return result{err: events.ErrClosed}
	}
}

// writeLoop is the writer goroutine: it commits groups of requests until
// Close, then fails whatever is still queued with ErrClosed.
func (s *Store) writeLoop() {
	defer close(s.writerDone)
	// A panic outside bbolt's own (guarded in commit) stops the process
	// (safego.Catch) before writerDone tells the waiting appends the
	// writer is gone (ErrClosed).
	defer safego.Catch("boltstore.write", nil)
	w := writer{db: s.db, store: s}
	for {
		var first *request
		select {
		case first = <-s.reqs:
		case <-s.quit:
			s.failQueued()
			return
		}
		select {
		case <-s.quit: // Close wins over a request that raced it
			if first.state.CompareAndSwap(pending, taken) {
				first.done <- result{err: events.ErrClosed}
			}
			s.failQueued()
			return
		default:
		}
		group := s.gather(first)
		if len(group) == 0 {
			continue
		}
		results, head, err := w.commit(group)
		if errors.Is(err, errPanicked) {
			// bbolt may hold its locks: touch the file no more.
			s.broken.CompareAndSwap(nil, &err)
		}
		// Head first, then the answers: a caller that reads Head after its
		// Append returned sees its own events.
		if err == nil && head != s.head.Load() {
			s.head.Store(head)
			s.sig.Notify()
		}
		for i, r := range group {
			if err != nil {
				r.done <- result{err: err}
			} else {
				r.done <- results[i]
			}
		}
	}
}

// gather takes first and every request already queued, within the group
// bounds, skipping requests abandoned by their callers.
func (s *Store) gather(first *request) []*request {
	var group []*request
	size := 0
	take := func(r *request) {
		if r.state.CompareAndSwap(pending, taken) {
			group = append(group, r)
			size += r.size
		}
	}
	take(first)
	for len(group) < maxGroupRequests && size < maxGroupBytes {
		select {
		case r := <-s.reqs:
			take(r)
		default:
			return group
		}
	}
	return group
}

func (s *Store) failQueued() {
	for {
		select {
		case r := <-s.reqs:
			if r.state.CompareAndSwap(pending, taken) {
				r.done <- result{err: events.ErrClosed}
			}
		default:
			return
		}
	}
}

// writer commits groups; only the writer goroutine uses it.
type writer struct {
	db    *bolt.DB
	store *Store
}

// commit applies group in one bbolt Update. It returns each request's
// result, and the new head; if the commit itself fails, err is set and
// nothing of the group was written. Positions continue from the head stored
// in the transaction itself.
func (w *writer) commit(group []*request) ([]result, uint64, error) {
	results := make([]result, len(group))
	var head uint64
	size := 0
	for _, r := range group {
		size += r.size
	}
	if b := w.store.broken.Load(); b != nil {
		return nil, 0, *b
	}
	err := guard(func() error {
		return w.db.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			var ok bool
			if head, ok = u64val(meta.Get(metaHead)); !ok {
				return damagedf("meta head missing or malformed")
			}
			t := txn{
				store:   w.store,
				tx:      tx,
				events:  tx.Bucket(bucketEvents),
				streams: tx.Bucket(bucketStreams),
				ids:     tx.Bucket(bucketIDs),
				head:    head,
				arena:   make([]byte, 0, size),
			}
			t.events.FillPercent = fillSequential
			t.ids.FillPercent = fillIDs
			for i, r := range group {
				evs, err := t.apply(r)
				if err != nil && !isRefusal(err) {
					return err // a bolt failure: the whole group fails
				}
				results[i] = result{evs: evs, err: err}
			}
			if t.head == head {
				return nil
			}
			if err := meta.Put(metaHead, u64key(t.head)); err != nil {
				return fmt.Errorf("write head %d: %w", t.head, err)
			}
			head = t.head
			return nil
		})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("commit of %d request(s): %w", len(group), err)
	}
	return results, head, nil
}

// isRefusal reports whether err refuses one request (leaving the others and
// the transaction alone) rather than failing the transaction.
func isRefusal(err error) bool {
	return errors.Is(err, events.ErrWrongExpectedVersion) || errors.Is(err, events.ErrIDConflict)
}

// txn is one group's write transaction.
type txn struct {
	store   *Store
	tx      *bolt.Tx
	events  *bolt.Bucket
	streams *bolt.Bucket
	ids     *bolt.Bucket
	head    uint64 // last position written in this transaction
	arena   []byte // records and keys: bbolt keeps them until the commit
}

// apply checks r against what is stored (including earlier requests of the
// group) and, if it holds, writes it. A refused request writes nothing.
func (t *txn) apply(r *request) ([]events.Event, error) {
	// Ids first: a batch whose ids are all stored with the same content is
	// a no-op whatever expected says.
	stored, err := t.storedIDs(r.evs)
	if err != nil {
		return nil, err
	}
	if stored != nil {
		return stored, nil
	}
	sb := t.streams.Bucket([]byte(r.stream))
	var version uint64
	if sb != nil {
		if version, err = t.store.streamVersion(sb, r.stream); err != nil {
			return nil, err
		}
	}
	if !r.expected.Check(version) {
		return nil, &events.VersionError{Stream: r.stream, Expected: r.expected, Actual: version}
	}
	// From here on every check has passed; a failure is bolt's, and fails
	// the transaction.
	if sb == nil {
		// A new stream, unless damage renamed its bucket.
		if err := t.store.checkStreamNames(t.tx); err != nil {
			return nil, err
		}
		if sb, err = t.streams.CreateBucket([]byte(r.stream)); err != nil {
			return nil, fmt.Errorf("create stream bucket %s: %w", r.stream, err)
		}
	}
	sb.FillPercent = fillSequential
	out := make([]events.Event, len(r.evs))
	for i, e := range r.evs {
		version++
		t.head++
		e.Version, e.Position = version, t.head
		start := len(t.arena)
		t.arena = events.AppendRecord(t.arena, e)
		rec := t.arena[start:len(t.arena):len(t.arena)]
		pos := t.key(t.head)
		if err := t.events.Put(pos, rec); err != nil {
			return nil, fmt.Errorf("write position %d: %w", t.head, err)
		}
		if err := sb.Put(t.key(version), pos); err != nil {
			return nil, fmt.Errorf("index %s version %d: %w", r.stream, version, err)
		}
		id := t.bytes(e.ID[:])
		if err := t.ids.Put(id, pos); err != nil {
			return nil, fmt.Errorf("index id %s: %w", e.ID, err)
		}
		out[i] = e
	}
	// The stream's version, kept twice (see streamVersion).
	if err := sb.SetSequence(version); err != nil {
		return nil, fmt.Errorf("stream %s: set sequence %d: %w", r.stream, version, err)
	}
	return out, nil
}

// recordSize is about how many arena bytes e takes: its record and keys.
func recordSize(e events.Event) int {
	return len(e.Data) + len(e.Stream) + len(e.Type) + len(e.Actor) +
		len(e.Causation) + len(e.Correlation) + 112
}

// key returns v as an 8-byte big-endian key that lives until the commit.
func (t *txn) key(v uint64) []byte {
	var b [8]byte
	b[0], b[1], b[2], b[3] = byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32)
	b[4], b[5], b[6], b[7] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return t.bytes(b[:])
}

// bytes copies b into the arena.
func (t *txn) bytes(b []byte) []byte {
	start := len(t.arena)
	t.arena = append(t.arena, b...)
	return t.arena[start:len(t.arena):len(t.arena)]
}

// storedIDs looks up the ids of evs. It returns (nil, nil) if none is
// stored, the stored events if all are stored with the same content, and an
// ErrIDConflict otherwise.
func (t *txn) storedIDs(evs []events.Event) ([]events.Event, error) {
	var stored []events.Event
	for i, e := range evs {
		pos := t.ids.Get(e.ID[:])
		if pos == nil {
			if stored != nil {
				return nil, fmt.Errorf("events[%d].id %s is new but events[0..%d] are stored: %w",
					i, e.ID, i-1, events.ErrIDConflict)
			}
			continue
		}
		if i > 0 && stored == nil {
			return nil, fmt.Errorf("events[%d].id %s is stored but events[0] is new: %w", i, e.ID, events.ErrIDConflict)
		}
		p, ok := u64val(pos)
		if !ok {
			return nil, damagedf("id %s points at %x", e.ID, pos)
		}
		rec := t.events.Get(pos)
		if rec == nil {
			return nil, damagedf("id %s points at position %d, which is not stored", e.ID, p)
		}
		old, err := t.store.decodeAt(pos, rec, p)
		if err != nil {
			return nil, fmt.Errorf("id %s: %w", e.ID, err)
		}
		if old.ID != e.ID {
			return nil, damagedf("id %s points at position %d, which holds id %s", e.ID, p, old.ID)
		}
		if !old.SameContent(e) {
			return nil, fmt.Errorf("events[%d].id %s is stored at position %d (%s) with other content: %w",
				i, e.ID, p, old, events.ErrIDConflict)
		}
		stored = append(stored, old)
	}
	return stored, nil
}
