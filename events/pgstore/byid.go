package pgstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"meshplane/events"
)

var _ events.IDReader = (*Store)(nil)

// ReadByID implements events.IDReader through the unique index on id
// (events_id_key), the one appends look ids up in.
func (s *Store) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	if err := s.check(ctx); err != nil {
		return events.Event{}, fmt.Errorf("pgstore: read id %s: %w", id, err)
	}
	evs, err := s.query(ctx, 1, "SELECT "+readColumns+" FROM events WHERE id = $1::uuid", [16]byte(id))
	if err != nil {
		return events.Event{}, fmt.Errorf("pgstore: read id %s: %w", id, s.closedOr(err))
	}
	if len(evs) == 0 {
		return events.Event{}, fmt.Errorf("pgstore: read id %s: %w", id, events.ErrNotFound)
	}
	return evs[0], nil
}
