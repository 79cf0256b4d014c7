package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

func recordEvents() map[string]events.Event {
	full := validEvent(idA)
	full.Stream, full.Version, full.Position, full.Schema = "node-novox", 300, 1<<40, 7
	full.Actor, full.Causation, full.Correlation = "agent:novox", "0193a6c1-7b2e-7c00-8000-000000000009", "push-9"
	long := full
	long.Stream = strings.Repeat("s", events.MaxNameSize)
	long.Data = json.RawMessage(`{"x":"` + strings.Repeat("é", 1000) + `"}`)
	return map[string]event{
		"full":          full,
		"minimal":       {ID: idB, Stream: "s", Type: "t", Schema: 1, At: time.Unix(0, 0)},
		"empty data":    {ID: idB, Stream: "s", Type: "t", Schema: 1, At: time.Unix(1, 1), Data: json.RawMessage{}},
		"before 1970":   {ID: idB, Stream: "s", Type: "t", Schema: 1, At: time.Date(1969, 7, 20, 20, 17, 40, 5, time.UTC)},
		"long names":    long,
		"unknown type":  {ID: idA, Stream: "future-1", Type: "future.thing", Schema: 99, At: testAt, Data: json.RawMessage("{ \"a\" :\n1 }")},
		"utf-8 names":   {ID: idA, Stream: "node-zürich", Type: "t", Schema: 1, At: testAt, Actor: "operator:ånn"},
		"max positions": {ID: idA, Stream: "s", Type: "t", Schema: 1 << 30, Version: 1<<64 - 1, Position: 1<<64 - 1, At: testAt},
	}
}

type event = events.Event

func TestRecordRoundTrip(t *testing.T) {
	for name, e := range recordEvents() {
		t.Run(name, func(t *testing.T) {
			b := events.AppendRecord([]byte("prefix"), e)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatalf("AppendRecord did not append")
			}
			rec := b[len("prefix"):]
			got, err := events.DecodeRecord(rec)
			if err != nil {
				t.Fatalf("DecodeRecord: %v", err)
			}
			if !got.SameContent(e) || got.Version != e.Version || got.Position != e.Position ||
				got.At.Location() != time.UTC || !bytes.Equal(got.Data, e.Data) {
				t.Errorf("round trip\n got %#v\nwant %#v", got, e)
			}
			// DecodeRecord copies: the buffer may be reused.
			scribbled := bytes.Repeat([]byte{'X'}, len(rec))
			copy(rec, scribbled)
			if !got.SameContent(e) {
				t.Errorf("decoded event changed with its buffer: %#v", got)
			}
		})
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	good := events.AppendRecord(nil, recordEvents()["full"])
	dataLen := len(recordEvents()["full"].Data)
	cases := []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"format only", []byte{1}},
		{"unknown format", append([]byte{2}, good[1:]...)},
		{"format 0", append([]byte{0}, good[1:]...)},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"data one byte short", good[:len(good)-1]},
		{"no data", good[:len(good)-dataLen-1]},
		{"bad uvarint", append(append([]byte(nil), good[:17]...), bytes.Repeat([]byte{0xff}, 11)...)},
		{"name over MaxNameSize", func() []byte {
			e := recordEvents()["minimal"]
			e.Stream = strings.Repeat("s", events.MaxNameSize+1)
			return events.AppendRecord(nil, e)
		}()},
		{"data over MaxDataSize", func() []byte {
			e := recordEvents()["minimal"]
			e.Data = bytes.Repeat([]byte{' '}, events.MaxDataSize+1)
			return events.AppendRecord(nil, e)
		}()},
		{"schema out of range", func() []byte {
			e := recordEvents()["minimal"]
			e.Schema = 1<<31 + 1
			return events.AppendRecord(nil, e)
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.DecodeRecord(tc.rec)
			if !errors.Is(err, events.ErrInvalid) {
				t.Errorf("DecodeRecord: got %#v, %v; want ErrInvalid", got, err)
			}
			if got.ID != uuid.Nil || got.Stream != "" || got.Data != nil {
				t.Errorf("DecodeRecord returned a half-decoded event beside its error: %#v", got)
			}
		})
	}
	// Every truncation of a good record is refused.
	for n := range len(good) {
		if _, err := events.DecodeRecord(good[:n]); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("record truncated to %d of %d bytes: got %v, want ErrInvalid", n, len(good), err)
		}
	}
}
