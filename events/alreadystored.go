package events

import (
	"bytes"
	"fmt"

	"github.com/google/uuid"
)

// AlreadyStored decides an append of evs by the events already stored under
// their ids, as Store.Append requires of every store: stored[i] is the event
// stored under evs[i].ID (with its Version and Position), or the zero Event
// if that id is not stored; stored may be nil when no id is. The store looks
// the ids up its own way (counting, in a group commit, the events accepted
// earlier in the same commit); AlreadyStored only compares, so that every store
// decides alike. It returns:
//
//   - false and nil if no id is stored: the append goes on, to its expected
//     version;
//   - true and nil if every id is stored with the same content (SameContent:
//     everything but Version and Position): the append is a no-op, whatever
//     its expected version says, and returns the stored events;
//   - otherwise an error wrapping ErrIDConflict naming the first event at
//     fault: a batch that mixes stored and new ids (decided before any content
//     is compared), or an id stored with other content, with the field that
//     differs.
func AlreadyStored(evs, stored []Event) (bool, error) {
	if stored == nil {
		return false, nil
	}
	if len(stored) != len(evs) {
		return false, fmt.Errorf("events: replay of %d events decided by %d stored ones", len(evs), len(stored))
	}
	firstStored, firstNew := -1, -1
	for i := range evs {
		switch {
		case stored[i].ID != uuid.Nil && firstStored < 0:
			firstStored = i
		case stored[i].ID == uuid.Nil && firstNew < 0:
			firstNew = i
		}
	}
	switch {
	case firstStored < 0:
		return false, nil
	case firstNew >= 0:
		s := stored[firstStored]
		return false, fmt.Errorf("events[%d].id %s is stored at position %d but events[%d].id %s is new: a batch is replayed whole or not at all: %w",
			firstStored, s.ID, s.Position, firstNew, evs[firstNew].ID, ErrIDConflict)
	}
	for i, e := range evs {
		if field := differs(stored[i], e); field != "" {
			s := stored[i]
			return false, fmt.Errorf("events[%d].id %s is stored at position %d (%s) with another %s: %w",
				i, e.ID, s.Position, s, field, ErrIDConflict)
		}
	}
	return true, nil
}

// differs names the first field of content in which a and b differ, or ""
// if they carry the same content (see SameContent).
func differs(a, b Event) string {
	switch {
	case a.ID != b.ID:
		return "id"
	case a.Stream != b.Stream:
		return "stream"
	case a.Type != b.Type:
		return "type"
	case a.Schema != b.Schema:
		return "schema"
	case !a.At.Equal(b.At):
		return "time"
	case a.Actor != b.Actor:
		return "actor"
	case a.Causation != b.Causation:
		return "causation"
	case a.Correlation != b.Correlation:
		return "correlation"
	case !bytes.Equal(a.Data, b.Data):
		return "data"
	}
	return ""
}
