package events

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is; stores wrap them with
// context ("boltstore: append node-novox: ...").
var (
	// ErrWrongExpectedVersion means an append's expected version did not match
	// the stream. The concrete error is a *VersionError carrying both versions.
	ErrWrongExpectedVersion = errors.New("wrong expected version")

	// ErrClosed means the store was closed before or during the call.
	ErrClosed = errors.New("store closed")

	// ErrInvalid means the input was refused as malformed (empty stream name,
	// oversized event, data that is not JSON, ...). The concrete error is an
	// *InvalidError naming what was wrong. Nothing was written.
	ErrInvalid = errors.New("invalid input")

	// ErrIDConflict means an event id is already stored with other content.
	ErrIDConflict = errors.New("event id already stored with other content")

	// ErrStoreFull means the store could not write for lack of space: its
	// disk is full (ENOSPC, a quota: EDQUOT; PostgreSQL's disk_full,
	// SQLSTATE 53100). Nothing of the append was written; the same append
	// succeeds once there is room. Stores wrap it beside the cause
	// ("boltstore: append node-n1: the event store is full: write
	// events.db: no space left on device"); the API answers it 507
	// store-full, the CLI says it and exits 1.
	ErrStoreFull = errors.New("the event store is full")

	// ErrUnknownType means a payload's type is not in the codec's registry.
	// Stores never return it: they keep events of every type. Projections count
	// and skip such events.
	ErrUnknownType = errors.New("unknown event type")
)

// VersionError reports an append whose expected version did not hold.
type VersionError struct {
	Stream   string
	Expected ExpectedVersion
	Actual   uint64 // the stream's version when the append was refused
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("stream %s: expected %s, stream is at version %d: %v",
		e.Stream, e.Expected, e.Actual, ErrWrongExpectedVersion)
}

// Is makes errors.Is(err, ErrWrongExpectedVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrWrongExpectedVersion }

// InvalidError names the field that was refused and why.
type InvalidError struct {
	Field  string // "stream", "events[2].data", ...
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Field, e.Reason, ErrInvalid)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
