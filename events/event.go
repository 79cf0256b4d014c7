package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Limits enforced by Validate, and so by every store.
const (
	// MaxDataSize is the largest payload a single event may carry.
	MaxDataSize = 1 << 20
	// MaxNameSize bounds stream names, types, actors, causation and correlation.
	MaxNameSize = 512
)

// The instants an event's time may take: those whose Unix nanoseconds fit an
// int64, as the record format stores them.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// Event is the envelope of docs/design.md. Id, Stream, Type, Schema, At, Actor,
// Causation, Correlation and Data are chosen by whoever creates the event;
// Version and Position are assigned by the store when it is appended.
//
// An Event is a value: stores and projections never modify one they were
// handed, and callers must not modify Data after handing it over.
type Event struct {
	ID          uuid.UUID       `json:"id"`
	Stream      string          `json:"stream"`
	Version     uint64          `json:"version"`
	Position    uint64          `json:"position"`
	Type        string          `json:"type"`
	Schema      int             `json:"schema"`
	At          time.Time       `json:"at"`
	Actor       string          `json:"actor,omitempty"`
	Causation   string          `json:"causation,omitempty"`
	Correlation string          `json:"correlation,omitempty"`
	Data        json.RawMessage `json:"data"`
	// Chain is the event's chain value (see chain.go), set by the store on
	// every event it returns (Append, reads, Subscribe); zero for an event
	// stored before its store chained. Append ignores it, SameContent does
	// not compare it, and the envelope's JSON leaves it out (the export
	// line carries it: MarshalJSONLine).
	Chain Hash `json:"-"`
}

// SameContent reports whether two events carry the same content: everything
// but the store-assigned Version and Position. Times compare as instants.
// It is what decides whether re-appending a stored id is a no-op (see
// Replayed).
func (e Event) SameContent(o Event) bool { return differs(e, o) == "" }

func (e Event) String() string {
	return fmt.Sprintf("%s@%d #%d %s", e.Stream, e.Version, e.Position, e.Type)
}

// NewID returns a fresh UUIDv7. It is for the shell (runners, adapters, the
// CLI); the pure core receives ids with its commands.
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

// Validate checks what every store checks before it writes anything: a
// non-nil id, a stream name, a type, a positive schema, bounded names, and
// data that is a JSON object (or empty, stored as {}) no larger than
// MaxDataSize. field prefixes the name of the offending field in the error.
func (e Event) Validate(field string) error {
	if e.ID == uuid.Nil {
		return invalid(field+".id", "missing")
	}
	if err := checkName(field+".stream", e.Stream, true); err != nil {
		return err
	}
	if err := checkName(field+".type", e.Type, true); err != nil {
		return err
	}
	if e.At.Before(minTime) || e.At.After(maxTime) {
		return invalid(field+".at", "%s is outside the years 1678 to 2262", e.At.Format(time.RFC3339))
	}
	if e.Schema < 1 {
		return invalid(field+".schema", "must be 1 or more, is %d", e.Schema)
	}
	for _, f := range []struct{ name, v string }{
		{"actor", e.Actor}, {"causation", e.Causation}, {"correlation", e.Correlation},
	} {
		if err := checkName(field+"."+f.name, f.v, false); err != nil {
			return err
		}
	}
	if len(e.Data) > MaxDataSize {
		return invalid(field+".data", "%d bytes, over the limit of %d", len(e.Data), MaxDataSize)
	}
	if len(e.Data) > 0 {
		if !json.Valid(e.Data) {
			return invalid(field+".data", "not valid JSON")
		}
		if d := bytes.TrimLeft(e.Data, " \t\r\n"); d[0] != '{' {
			return invalid(field+".data", "not a JSON object")
		}
	}
	return nil
}

func checkName(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return invalid(field, "empty")
	case len(v) > MaxNameSize:
		return invalid(field, "%d bytes, over the limit of %d", len(v), MaxNameSize)
	case !utf8.ValidString(v):
		return invalid(field, "not valid UTF-8")
	}
	return nil
}

// ValidateStream checks a stream name as Append and ReadStream do.
func ValidateStream(stream string) error { return checkName("stream", stream, true) }

// Prepare validates a batch for an append to stream and returns copies with
// the stream filled in where it was empty, At defaulted to now where zero, and
// empty data stored as {}. Stores call it first, so a refused batch writes
// nothing. Every event must belong to stream, and ids must be distinct.
func Prepare(stream string, evs []Event, now time.Time) ([]Event, error) {
	if err := ValidateStream(stream); err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, invalid("events", "no events to append")
	}
	out := make([]Event, len(evs))
	seen := make(map[uuid.UUID]struct{}, len(evs))
	for i, e := range evs {
		field := fmt.Sprintf("events[%d]", i)
		if e.Stream == "" {
			e.Stream = stream
		}
		if e.Stream != stream {
			return nil, invalid(field+".stream", "%q in an append to %q", e.Stream, stream)
		}
		if e.At.IsZero() {
			e.At = now
		}
		e.At = e.At.UTC()
		if len(e.Data) == 0 {
			e.Data = json.RawMessage("{}")
		}
		e.Version, e.Position, e.Chain = 0, 0, Hash{}
		if err := e.Validate(field); err != nil {
			return nil, err
		}
		if _, dup := seen[e.ID]; dup {
			return nil, invalid(field+".id", "%s appears twice in one append", e.ID)
		}
		seen[e.ID] = struct{}{}
		out[i] = e
	}
	return out, nil
}
