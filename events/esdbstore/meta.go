package esdbstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// metaFormat is the version of the metadata JSON below. A reader refuses any
// other, rather than guess at fields it does not know.
const metaFormat = 1

// meta is the custom metadata JSON of every event esdbstore writes: the
// envelope fields KurrentDB does not hold natively. Its wire form, one JSON
// object, is a persisted format (add fields, never rename them):
//
//		{"mesh":1,"schema":3,"at":"2026-09-30T02:46:01.987654321Z",
//		 "actor":"agent:novox","$causationId":"018f…","$correlationId":"push-17"}
//
//	  - mesh: metaFormat; required.
//	  - schema: events.Event.Schema; required, 1 or more.
//	  - at: events.Event.At in UTC, RFC 3339 with nanoseconds (KurrentDB's own
//	    "created" is the server's clock in 100 ns ticks: neither ours nor
//	    precise enough); required.
//	  - actor, $causationId, $correlationId: Actor, Causation, Correlation;
//	    omitted when empty. Causation and correlation use KurrentDB's own
//	    metadata names, so its $by_correlation_id projection sees them.
//
// The other fields map natively: ID is the KurrentDB event id, Type the event
// type, Data the event data (content type application/json), Stream the
// stream name less the store's prefix, Version the stream revision plus one.
// Position is not written at all: see the package comment.
type meta struct {
	Format      int    `json:"mesh"`
	Schema      int    `json:"schema"`
	At          string `json:"at"`
	Actor       string `json:"actor,omitempty"`
	Causation   string `json:"$causationId,omitempty"`
	Correlation string `json:"$correlationId,omitempty"`
}

// The instants an event's time may take (as events.Event.Validate checks):
// those whose Unix nanoseconds fit an int64.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// errMeta marks metadata esdbstore cannot read: an event in the store's
// streams that it did not write, or a corrupted one.
var errMeta = errors.New("metadata not written by esdbstore")

func encodeMeta(schema int, at time.Time, actor, causation, correlation string) ([]byte, error) {
	return json.Marshal(meta{
		Format: metaFormat, Schema: schema, At: at.UTC().Format(time.RFC3339Nano),
		Actor: actor, Causation: causation, Correlation: correlation,
	})
}

// decodeMeta reads what encodeMeta wrote, and refuses anything else.
func decodeMeta(b []byte) (meta, time.Time, error) {
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return meta{}, time.Time{}, fmt.Errorf("%w: %w", errMeta, err)
	}
	if m.Format != metaFormat {
		return meta{}, time.Time{}, fmt.Errorf("%w: format %d, want %d", errMeta, m.Format, metaFormat)
	}
	if m.Schema < 1 {
		return meta{}, time.Time{}, fmt.Errorf("%w: schema %d", errMeta, m.Schema)
	}
	at, err := time.Parse(time.RFC3339Nano, m.At)
	if err != nil {
		return meta{}, time.Time{}, fmt.Errorf("%w: at: %w", errMeta, err)
	}
	if at.Before(minTime) || at.After(maxTime) {
		return meta{}, time.Time{}, fmt.Errorf("%w: at %s is outside the years 1678 to 2262", errMeta, m.At)
	}
	return m, at.UTC(), nil
}
