package events

import (
	"context"
	"errors"

	"github.com/google/uuid"
)

// ErrNotFound means no event is stored under the id asked for
// (IDReader.ReadByID).
var ErrNotFound = errors.New("no event stored under that id")

// IDReader is a Store that reads one event by its id, through the id index
// every store keeps for idempotent appends. ReadByID returns the event
// stored under id, with its Version and Position, or an error wrapping
// ErrNotFound when none is. Every store of this module implements it
// (memstore, boltstore, pgstore, esdbstore: storetest.RunByID checks
// each); a reader that is handed a Store asks for it with a type
// assertion, as for Scanner.
//
// It is what resolves a compact apply report's held_since at any distance
// (HeldOf): a held list named by a report a year of quiet passes earlier
// is one lookup, never a scan and never a bounded list in memory.
type IDReader interface {
	ReadByID(ctx context.Context, id uuid.UUID) (Event, error)
}
