package memstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"meshplane/events"
)

// OpReadByID is ReadByID's operation, for a Fault.
const OpReadByID Op = "read-by-id"

var _ events.IDReader = (*Store)(nil)

// ReadByID implements events.IDReader from the id index appends keep.
func (s *Store) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	if err := s.check(ctx, OpReadByID, ""); err != nil {
		return events.Event{}, fmt.Errorf("memstore: read id %s: %w", id, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return events.Event{}, fmt.Errorf("memstore: read id %s: %w", id, events.ErrClosed)
	}
	pos, ok := s.ids[id]
	if !ok {
		return events.Event{}, fmt.Errorf("memstore: read id %s: %w", id, events.ErrNotFound)
	}
	out := []events.Event{s.log[pos-1]}
	cloneData(out)
	return out[0], nil
}
