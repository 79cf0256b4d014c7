package boltstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/events/internal/groupcommit"
)

// Group bounds: the writer stops gathering requests for one commit past
// either. A single request larger than both still commits, alone.
const (
	maxGroupRequests = 4096
	maxGroupBytes    = 32 << 20
)

// queueSize bounds the requests waiting for the writer; Append blocks (or
// honours its ctx) while it is full.
const queueSize = 1024

// maxGatherWait bounds how long the writer waits for a group to fill (see
// groupcommit's gather).
const maxGatherWait = 5 * time.Millisecond

// startWriter starts the writer goroutine: events/internal/groupcommit's
// committer, around commitGroup.
func (s *Store) startWriter() error {
	c, err := groupcommit.Start(s.commitGroup, groupcommit.Config{
		Queue: queueSize, MaxRequests: maxGroupRequests, MaxBytes: maxGroupBytes, MaxWait: maxGatherWait,
		Name: "boltstore",
	})
	s.commits = c
	return err
}

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
	r := &groupcommit.Request{Stream: stream, Expected: expected, Events: prepared}
	for _, e := range prepared {
		r.Size += recordSize(e)
	}
	out, err := s.commits.Submit(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("boltstore: append %s: %w", stream, full(err))
	}
	return out, nil
}

// full is err, wrapped with events.ErrStoreFull when it says the file
// could not grow: no space left on its disk (ENOSPC) or the user's quota
// spent (EDQUOT). bbolt rolls the transaction back: nothing was written.
func full(err error) error {
	// bbolt keeps the errno when a write or a sync fails, but says a failed
	// resize of the file with %s: its text is all there is.
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), syscall.ENOSPC.Error()) {
		return fmt.Errorf("%w: %w", events.ErrStoreFull, err)
	}
	return err
}

// commitGroup is the writer's commit: one bbolt Update for the group, then
// the new head published, before any caller hears of its events.
func (s *Store) commitGroup(group []*groupcommit.Request) ([]groupcommit.Result, error) {
	if s.lazy != nil {
		// Opened with WalkInBackground: nothing is written before the
		// walk of the whole file has passed; damage it found breaks the
		// store for writes.
		if err := s.lazy.all(); err != nil {
			if errors.Is(err, events.ErrDamaged) {
				s.broken.CompareAndSwap(nil, &err)
			}
			return nil, err
		}
	}
	w := writer{db: s.db, store: s}
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
	return results, err
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
func (w *writer) commit(group []*groupcommit.Request) ([]groupcommit.Result, uint64, error) {
	results := make([]groupcommit.Result, len(group))
	var head uint64
	size := 0
	for _, r := range group {
		size += r.Size
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
				chain:   tx.Bucket(bucketChain),
				head:    head,
				arena:   make([]byte, 0, size+chainValueSize*len(group)),
			}
			if w.store.chainStart != 0 {
				// The chain goes on from the head's value, read in
				// this transaction (zero before the chain's start).
				var err error
				if t.prev, err = w.store.chainAt(t.chain, head); err != nil {
					return err
				}
				t.chain.FillPercent = fillSequential
			}
			t.events.FillPercent = fillSequential
			t.ids.FillPercent = fillIDs
			for i, r := range group {
				evs, err := t.apply(r)
				if err != nil && !isRefusal(err) {
					return err // a bolt failure: the whole group fails
				}
				results[i] = groupcommit.Result{Events: evs, Err: err}
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
	chain   *bolt.Bucket // nil in an unchained file
	prev    events.Hash  // the chain value of head
	head    uint64       // last position written in this transaction
	arena   []byte       // records and keys: bbolt keeps them until the commit
}

// apply checks r against what is stored (including earlier requests of the
// group) and, if it holds, writes it. A refused request writes nothing.
func (t *txn) apply(r *groupcommit.Request) ([]events.Event, error) {
	// Ids first: a batch whose ids are all stored with the same content is
	// a no-op whatever expected says.
	stored, err := t.storedIDs(r.Events)
	if err != nil {
		return nil, err
	}
	if stored != nil {
		return stored, nil
	}
	sb := t.streams.Bucket([]byte(r.Stream))
	var version uint64
	if sb != nil {
		if version, err = t.store.streamVersion(sb, r.Stream); err != nil {
			return nil, err
		}
	}
	if !r.Expected.Check(version) {
		return nil, &events.VersionError{Stream: r.Stream, Expected: r.Expected, Actual: version}
	}
	// From here on every check has passed; a failure is bolt's, and fails
	// the transaction.
	if sb == nil {
		// A new stream, unless damage renamed its bucket.
		if err := t.store.checkStreamNames(t.tx); err != nil {
			return nil, err
		}
		if sb, err = t.streams.CreateBucket([]byte(r.Stream)); err != nil {
			return nil, fmt.Errorf("create stream bucket %s: %w", r.Stream, err)
		}
	}
	sb.FillPercent = fillSequential
	out := make([]events.Event, len(r.Events))
	for i, e := range r.Events {
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
		if t.store.chainStart != 0 {
			// The chain value, computed where the position is
			// assigned: in this transaction, from the one before.
			e.Chain = events.ChainRecord(t.prev, rec)
			t.prev = e.Chain
			start := len(t.arena)
			t.arena = appendChainValue(t.arena, t.head, e.Chain)
			if err := t.chain.Put(pos, t.arena[start:len(t.arena):len(t.arena)]); err != nil {
				return nil, fmt.Errorf("chain value of position %d: %w", t.head, err)
			}
		}
		if err := sb.Put(t.key(version), pos); err != nil {
			return nil, fmt.Errorf("index %s version %d: %w", r.Stream, version, err)
		}
		id := t.bytes(e.ID[:])
		if err := t.ids.Put(id, pos); err != nil {
			return nil, fmt.Errorf("index id %s: %w", e.ID, err)
		}
		out[i] = e
	}
	// The stream's version, kept twice (see streamVersion).
	if err := sb.SetSequence(version); err != nil {
		return nil, fmt.Errorf("stream %s: set sequence %d: %w", r.Stream, version, err)
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

// storedIDs looks up the ids of evs and decides them by events.AlreadyStored.
// It returns (nil, nil) if none is stored, the stored events if all are
// stored with the same content, and an ErrIDConflict otherwise.
func (t *txn) storedIDs(evs []events.Event) ([]events.Event, error) {
	var stored []events.Event // nil while no id is stored: the usual request
	for i, e := range evs {
		pos := t.ids.Get(e.ID[:])
		if pos == nil {
			continue
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
		if old.Chain, err = t.store.chainAt(t.chain, p); err != nil {
			return nil, fmt.Errorf("id %s: %w", e.ID, err)
		}
		if stored == nil {
			stored = make([]events.Event, len(evs))
		}
		stored[i] = old
	}
	if done, err := events.AlreadyStored(evs, stored); !done {
		return nil, err
	}
	return stored, nil
}
