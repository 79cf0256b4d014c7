package esdbstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"meshplane/events"
)

var _ events.IDReader = (*Store)(nil)

// ReadByID implements events.IDReader from the position table's ids (every
// chunk read once, as an append's replay check reads them), then the event
// at that position from $all. An id the table does not hold yet may have
// been appended by another process since: the table is brought up to date
// before the answer is ErrNotFound.
func (s *Store) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return events.Event{}, fmt.Errorf("esdbstore: read id %s: %w", id, err)
	}
	defer end()
	ev, err := s.readByID(ctx, id)
	if err != nil {
		return events.Event{}, fmt.Errorf("esdbstore: read id %s: %w", id, err)
	}
	return ev, nil
}

func (s *Store) readByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	if err := s.loadIDs(ctx); err != nil {
		return events.Event{}, s.fail(ctx, err)
	}
	p, ok := s.idAt(id)
	if !ok {
		if err := s.catchUp(ctx); err != nil {
			return events.Event{}, s.fail(ctx, err)
		}
		if p, ok = s.idAt(id); !ok {
			return events.Event{}, events.ErrNotFound
		}
	}
	got, err := s.readAll(ctx, p-1, 1)
	if err != nil {
		return events.Event{}, s.fail(ctx, err)
	}
	if len(got) != 1 || got[0].ID != id {
		return events.Event{}, fmt.Errorf("id %s not found at its position %d", id, p)
	}
	return got[0], nil
}

func (s *Store) idAt(id uuid.UUID) (uint64, bool) {
	s.tab.Lock()
	defer s.tab.Unlock()
	p, ok := s.ids[id]
	return p, ok
}
