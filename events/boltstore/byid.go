package boltstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"meshplane/events"
)

var _ events.IDReader = (*Store)(nil)

// ReadByID implements events.IDReader: the ids bucket gives the position,
// and the record there is checked as every read checks it (its checksum,
// its position) and must carry the id. On a read-only store the file is
// walked first, as for ReadStream: the ids bucket is among the parts a
// bounded open leaves for later.
func (s *Store) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	if err := s.check(ctx); err != nil {
		return events.Event{}, fmt.Errorf("boltstore: read id %s: %w", id, err)
	}
	if s.lazy != nil {
		if err := s.lazy.all(); err != nil {
			return events.Event{}, fmt.Errorf("boltstore: read id %s: %w", id, err)
		}
	}
	var out events.Event
	err := s.view(func(tx *bolt.Tx) error {
		pos := tx.Bucket(bucketIDs).Get(id[:])
		if pos == nil {
			return events.ErrNotFound
		}
		p, ok := u64val(pos)
		if !ok {
			return damagedf("id %s points at %x", id, pos)
		}
		rec := tx.Bucket(bucketEvents).Get(pos)
		if rec == nil {
			return damagedf("id %s points at position %d, which is not stored", id, p)
		}
		e, err := s.decodeAt(pos, rec, p)
		if err != nil {
			return err
		}
		if e.ID != id {
			return damagedf("id %s points at position %d, which holds id %s", id, p, e.ID)
		}
		out = e
		return nil
	})
	if err != nil {
		return events.Event{}, fmt.Errorf("boltstore: read id %s: %w", id, err)
	}
	return out, nil
}
