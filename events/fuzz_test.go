package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// FuzzDecodeRecord: DecodeRecord never panics, refuses with ErrInvalid and
// ErrDamaged, and any record it accepts is canonical: it re-encodes, in its
// own format, to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, e := range recordEvents() {
		f.Add(events.AppendRecord(nil, e))
		f.Add(events.AppendRecordPlain(nil, e))
	}
	for _, e := range recordEvents() {
		f.Add(events.AppendRecordPlain(nil, e))
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, rec []byte) {
		in := bytes.Clone(rec)
		e, err := events.DecodeRecord(rec)
		if !bytes.Equal(in, rec) {
			t.Fatalf("DecodeRecord modified its input")
		}
		if err != nil {
			if !errors.Is(err, events.ErrInvalid) || !errors.Is(err, events.ErrDamaged) {
				t.Fatalf("DecodeRecord error %v does not wrap ErrInvalid and ErrDamaged", err)
			}
			return
		}
		again := events.AppendRecord(nil, e)
		if events.RecordFormat(rec) == events.RecordFormatPlain {
			again = events.AppendRecordPlain(nil, e)
		}
		if !bytes.Equal(again, rec) {
			t.Fatalf("accepted record does not re-encode to itself:\n  in %x\n out %x\nevent %#v", rec, again, e)
		}
	})
}

// FuzzRecordRoundTrip: every event that Prepare accepts survives
// AppendRecord then DecodeRecord unchanged.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add(idA[:], "node-novox", "node.registered", 1, int64(1790721960), int64(123456789), "agent:novox", "", "c", []byte(`{"node":"novox"}`), uint64(1), uint64(1))
	f.Add(idB[:], "s", "t", 99, int64(-1), int64(0), "", "", "", []byte(`{}`), uint64(1<<63), uint64(0))
	f.Fuzz(func(t *testing.T, id []byte, stream, typ string, schema int, sec, nsec int64, actor, causation, correlation string, data []byte, version, position uint64) {
		var u uuid.UUID
		copy(u[:], id)
		e := events.Event{ID: u, Type: typ, Schema: schema, At: time.Unix(sec, nsec), Actor: actor,
			Causation: causation, Correlation: correlation, Data: data}
		prep, err := events.Prepare(stream, []events.Event{e}, time.Unix(0, 1))
		if err != nil {
			return
		}
		e = prep[0]
		e.Version, e.Position = version, position
		got, err := events.DecodeRecord(events.AppendRecord(nil, e))
		if err != nil {
			t.Fatalf("DecodeRecord of a prepared event: %v\nevent %#v", err, e)
		}
		if !got.SameContent(e) || got.Version != e.Version || got.Position != e.Position {
			t.Fatalf("round trip\n got %#v\nwant %#v", got, e)
		}
	})
}

// FuzzUnmarshalJSONLine: never panics; an accepted line re-marshals to a
// line that decodes to the same event.
func FuzzUnmarshalJSONLine(f *testing.F) {
	for _, s := range []string{
		`{"stream": "node-novox", "type": "declaration.composed", "at": "2026-09-29T22:46:00Z", "data": {"node":"novox"}}`,
		`{"id":"0193a6c1-7b2e-7c00-8000-000000000001","stream":"s","version":3,"position":9,"type":"t","schema":2,"at":"2026-09-29T22:46:00.5+02:00","actor":"a","causation":"c","correlation":"r","data":{}}`,
		`{}`, `{"strem":"s"}`, `[]`, `null`, `{"data":null}`, `{"a":1} {"b":2}`, `{"stream":"s"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := events.UnmarshalJSONLine(line)
		if err != nil {
			if !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if e.Schema == 0 {
			t.Fatalf("accepted event with schema 0")
		}
		out, err := events.MarshalJSONLine(e)
		if err != nil {
			// A time outside years 0..9999 cannot be marshalled; nothing else may fail.
			if e.At.Year() >= 0 && e.At.Year() <= 9999 {
				t.Fatalf("MarshalJSONLine of an accepted event: %v", err)
			}
			return
		}
		again, err := events.UnmarshalJSONLine(out)
		if err != nil {
			t.Fatalf("re-read of %s: %v", out, err)
		}
		// Data is re-marshalled compact, and absent data comes back as
		// null: compare it apart.
		a, b := again, e
		a.Data, b.Data = nil, nil
		if !a.SameContent(b) || a.Version != b.Version || a.Position != b.Position ||
			!bytes.Equal(jsonNorm(again.Data), jsonNorm(e.Data)) {
			t.Fatalf("line round trip\n got %#v\nwant %#v", again, e)
		}
	})
}

// jsonNorm is b compacted, with absent data as null.
func jsonNorm(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}

// FuzzPrepare: never panics; a refusal is an *InvalidError; an accepted
// batch is valid, in the stream, in UTC, with distinct ids.
func FuzzPrepare(f *testing.F) {
	f.Add("node-novox", idA[:], "node.registered", 1, []byte(`{"node":"novox"}`), "agent:novox", true)
	f.Add("", idB[:], "", 0, []byte(`[`), "\xff", false)
	f.Fuzz(func(t *testing.T, stream string, id []byte, typ string, schema int, data []byte, actor string, twice bool) {
		var u uuid.UUID
		copy(u[:], id)
		e := events.Event{ID: u, Type: typ, Schema: schema, At: testAt, Actor: actor, Data: data}
		batch := []events.Event{e}
		if twice {
			second := e
			second.ID = uuid.UUID(bytes.Repeat([]byte{0x42}, 16))
			batch = append(batch, second)
		}
		got, err := events.Prepare(stream, batch, testNow)
		if err != nil {
			var ie *events.InvalidError
			if !errors.As(err, &ie) || ie.Field == "" {
				t.Fatalf("Prepare error %v is not an *InvalidError naming a field", err)
			}
			return
		}
		seen := map[uuid.UUID]bool{}
		for i, p := range got {
			if err := p.Validate("again"); err != nil {
				t.Fatalf("prepared event %d does not validate: %v", i, err)
			}
			if p.Stream != stream || p.At.Location() != time.UTC || seen[p.ID] {
				t.Fatalf("prepared event %d: %#v", i, p)
			}
			seen[p.ID] = true
		}
	})
}
