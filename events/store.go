package events

import (
	"context"
	"fmt"
)

// ExpectedVersion is what an append expects of its stream: Any, NoStream, or
// exactly the version N (N >= 1) the stream is at.
type ExpectedVersion int64

const (
	// Any appends whatever the stream's version.
	Any ExpectedVersion = -1
	// NoStream appends only to a stream that has never been written.
	NoStream ExpectedVersion = 0
)

// Exactly expects the stream to be at version v. Exactly(0) is NoStream.
func Exactly(v uint64) ExpectedVersion { return ExpectedVersion(v) }

// Check reports whether a stream at version actual satisfies e.
func (e ExpectedVersion) Check(actual uint64) bool {
	return e == Any || uint64(e) == actual
}

func (e ExpectedVersion) String() string {
	switch {
	case e == Any:
		return "any version"
	case e == NoStream:
		return "no stream"
	case e < 0:
		return fmt.Sprintf("invalid expectation %d", int64(e))
	default:
		return fmt.Sprintf("version %d", int64(e))
	}
}

// Valid reports whether e is Any, NoStream or a positive version.
func (e ExpectedVersion) Valid() bool { return e >= Any }

// Store is the contract every event store implements. It is safe for
// concurrent use. Every method honours ctx, and returns an error wrapping
// ErrClosed once Close has been called.
//
// A store keeps events of every type, known to this build or not: it never
// decodes payloads.
type Store interface {
	// Append atomically appends evs to stream if the stream's version satisfies
	// expected, and returns the events as stored, with Version and Position
	// set. Either every event is appended or none is.
	//
	// If every event's id is already stored with the same content, Append is a
	// no-op that returns the stored events, whatever expected says. An id
	// stored with other content, or a batch mixing stored and new ids, is
	// refused with ErrIDConflict. A wrong expected version is a *VersionError;
	// malformed input is an *InvalidError (see Prepare).
	Append(ctx context.Context, stream string, expected ExpectedVersion, evs ...Event) ([]Event, error)

	// ReadStream returns the events of stream whose version is above after, in
	// version order, at most limit of them (limit <= 0: all). A stream never
	// written reads as empty.
	ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]Event, error)

	// ReadAll returns the events whose position is above after, in position
	// order, at most limit of them (limit <= 0: all).
	ReadAll(ctx context.Context, after uint64, limit int) ([]Event, error)

	// Subscribe calls fn with every event whose position is above after, in
	// position order: first those already stored, then each as it is
	// committed, never skipping one and never repeating one. It blocks until
	// ctx is done (returning ctx.Err()), the store is closed (ErrClosed), or fn
	// returns an error (returned as is).
	Subscribe(ctx context.Context, after uint64, fn func(Event) error) error

	// Head returns the position of the last stored event (0 when empty).
	Head(ctx context.Context) (uint64, error)

	// ChainHead returns the head of the hash chain: the last stored
	// position, its chain value and its event's time (the zero ChainHead
	// when empty). Every event a store returns carries its chain value
	// (Event.Chain; see chain.go).
	ChainHead(ctx context.Context) (ChainHead, error)

	// Close releases the store. Blocked calls return ErrClosed.
	Close() error
}

// Scanner is a Store that can also read the log without keeping it. ScanAll
// calls fn with each event ReadAll(ctx, after, limit) would return, in
// position order, and returns fn's first error as is (the scan stops there)
// or the read's. The event's Data is valid only until fn returns: the store
// reuses its bytes. A reader that decodes each payload as it comes
// (projections.Runner's catch-up) spares the copy of every payload that
// ReadAll makes, which for a rebuild from PostgreSQL was a third of the
// memory it mapped.
type Scanner interface {
	ScanAll(ctx context.Context, after uint64, limit int, fn func(Event) error) error
}
