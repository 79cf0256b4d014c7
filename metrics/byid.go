package metrics

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"meshplane/events"
)

// errNoIDReads is ReadByID on a decorated store that does not read by id.
var errNoIDReads = errors.New("the store does not read events by id")

var _ events.IDReader = (*timedStore)(nil)

// ReadByID passes through to the inner store's events.IDReader, so that
// the controller's projections, fed through this decorator, resolve a
// compact report's held_since through the store (projections.Reports).
func (s *timedStore) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	r, ok := s.Store.(events.IDReader)
	if !ok {
		return events.Event{}, fmt.Errorf("metrics: read id %s of a %T: %w", id, s.Store, errNoIDReads)
	}
	return r.ReadByID(ctx, id)
}
