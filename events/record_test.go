package events_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"
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
			if f := events.RecordFormat(rec); f != events.RecordFormatChecked {
				t.Fatalf("AppendRecord wrote format %d, want %d", f, events.RecordFormatChecked)
			}
			// Records of format 1, written before the checksum, still read.
			plain, err := events.DecodeRecord(events.AppendRecordPlain(nil, e))
			if err != nil {
				t.Fatalf("DecodeRecord of format 1: %v", err)
			}
			got, err := events.DecodeRecord(rec)
			if err != nil {
				t.Fatalf("DecodeRecord: %v", err)
			}
			if !reflect.DeepEqual(plain, got) {
				t.Errorf("format 1 and 3 decode differently\n 1: %#v\n 3: %#v", plain, got)
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
	plain := events.AppendRecordPlain(nil, recordEvents()["full"])
	dataLen := len(recordEvents()["full"].Data)
	cases := []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"format only", []byte{1}},
		{"unknown format", append([]byte{4}, good[1:]...)},
		{"format 0", append([]byte{0}, good[1:]...)},
		{"format 3 read as 1", append([]byte{1}, good[1:]...)},
		{"format 1 read as 3", append([]byte{3}, plain[1:]...)},
		{"unreleased format 2", append([]byte{2}, plain[1:]...)},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"checksum one byte short", good[:len(good)-1]},
		{"plain: trailing byte", append(append([]byte(nil), plain...), 0)},
		{"plain: data one byte short", plain[:len(plain)-1]},
		{"plain: no data", plain[:len(plain)-dataLen-1]},
		{"plain: bad uvarint", append(append([]byte(nil), plain[:17]...), bytes.Repeat([]byte{0xff}, 11)...)},
		{"bad uvarint, good checksum", checksummed(append(append([]byte{2}, plain[1:17]...), bytes.Repeat([]byte{0xff}, 11)...))},
		{"trailing byte, good checksum", checksummed(append(append([]byte(nil), good[:len(good)-4]...), 0))},
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
			if !errors.Is(err, events.ErrInvalid) || !errors.Is(err, events.ErrDamaged) {
				t.Errorf("DecodeRecord: got %#v, %v; want ErrInvalid and ErrDamaged", got, err)
			}
			if got.ID != uuid.Nil || got.Stream != "" || got.Data != nil {
				t.Errorf("DecodeRecord returned a half-decoded event beside its error: %#v", got)
			}
		})
	}
	// Every truncation of a good record is refused, in either format.
	for _, rec := range [][]byte{good, plain} {
		for n := range len(rec) {
			if _, err := events.DecodeRecord(rec[:n]); !errors.Is(err, events.ErrInvalid) {
				t.Errorf("format %d record truncated to %d of %d bytes: got %v, want ErrInvalid", rec[0], n, len(rec), err)
			}
		}
	}
}

// Records stored in format 1, before format 3, still decode to the same
// events; format 3 is shorter wherever a name has a short form.
func TestRecordFormat1StillReads(t *testing.T) {
	evs := recordEvents()
	compact := validEvent(idA)
	compact.Stream, compact.Type, compact.Actor = "node-novox", events.TypeApplyReported, "agent:novox"
	compact.Correlation = "0193a6c1-7b2e-7c00-8000-000000000009"
	evs["compact names"] = compact
	op := compact
	op.Actor, op.Type, op.Causation = "operator:ann", events.TypeModuleAssigned, compact.Correlation
	evs["operator"] = op
	ctl := compact
	ctl.Actor, ctl.Type = "controller", "declaration.future"
	evs["controller, unknown type"] = ctl
	for name, e := range evs {
		t.Run(name, func(t *testing.T) {
			old := events.AppendRecordPlain(nil, e)
			if old[0] != 1 {
				t.Fatalf("format byte %d", old[0])
			}
			got, err := events.DecodeRecord(old)
			if err != nil {
				t.Fatal(err)
			}
			if !got.SameContent(e) || got.Version != e.Version || got.Position != e.Position {
				t.Fatalf("format 1\n got %#v\nwant %#v", got, e)
			}
			// Format 3 costs its 4-byte checksum, and a type without a
			// code a byte more (its code 0).
			extra := 4
			if !slices.Contains(events.RecordTypes, e.Type) {
				extra++
			}
			if n, o := len(events.AppendRecord(nil, e)), len(old); n > o+extra {
				t.Fatalf("format 3 is %d bytes, format 1 %d", n, o)
			}
		})
	}
	if n, o := len(events.AppendRecord(nil, compact)), len(events.AppendRecordPlain(nil, compact)); o-n != 14+11+20-4 {
		t.Errorf("an agent's report: format 3 saves %d bytes, want 41 (type 14, actor 11, correlation 20, less the 4-byte checksum)", o-n)
	}
}

// The type codes of format 3 are persisted: the table may only grow.
func TestRecordTypeCodesArePinned(t *testing.T) {
	want := []string{
		"node.registered", "node.adopted", "node.setting-set", "module.defined",
		"module.assigned", "module.released", "module.taken", "artifact.recorded",
		"declaration.composed", "declaration.compose-failed", "declaration.pushed",
		"declaration.push-failed", "apply.reported", "report.delivered-late",
	}
	got := events.RecordTypes
	if len(got) < len(want) {
		t.Fatalf("%d type codes, fewer than the %d stored records may use", len(got), len(want))
	}
	for i, typ := range want {
		if got[i] != typ {
			t.Fatalf("type code %d is %q, was %q: records stored with it would change type", i+1, got[i], typ)
		}
	}
}

// A format-3 record has one encoding: a name written long where a short
// form exists is refused, as is an unknown code.
func TestRecordFormat3RefusesNonCanonicalNames(t *testing.T) {
	head := func(b []byte) []byte {
		b = append(b, 3)
		b = append(b, idA[:]...)
		return append(b, 1, 1, 1, 0) // version, position, schema, at
	}
	str := func(b []byte, s string) []byte { return append(append(b, byte(len(s))), s...) }
	long := func(b []byte, base int, s string) []byte { return append(append(b, byte(base+len(s))), s...) }
	uuidText := "0193a6c1-7b2e-7c00-8000-000000000009"
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"known type as a string", append(str(append(str(head(nil), "s"), 0), "apply.reported"), 0, 0, 0, 0)},
		{"unknown type code", append(str(head(nil), "s"), 99, 0, 0, 0, 0)},
		{"controller as a string", append(long(append(str(head(nil), "s"), 1), 4, "controller"), 0, 0, 0)},
		{"the node's agent as a string", append(long(append(str(head(nil), "node-a"), 1), 4, "agent:a"), 0, 0, 0)},
		{"an operator as a string", append(long(append(str(head(nil), "s"), 1), 4, "operator:ann"), 0, 0, 0)},
		{"an empty actor as a string", append(str(head(nil), "s"), 1, 4, 0, 0, 0)},
		{"agent code off a node stream", append(str(head(nil), "s"), 1, 2, 0, 0, 0)},
		{"an actor over the limit", append(str(head(nil), "s"), 1, 0xff, 0x7f, 0, 0, 0)},
		{"a UUID correlation as a string", append(long(append(str(head(nil), "s"), 1, 0, 0), 2, uuidText), 0)},
		{"an empty causation as a string", append(str(head(nil), "s"), 1, 0, 2, 0, 0)},
		{"truncated UUID", append(str(head(nil), "s"), 1, 0, 0, 1, 0xab)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e, err := events.DecodeRecord(tc.rec); !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("DecodeRecord = %#v, %v; want ErrInvalid", e, err)
			}
		})
	}
}

// checksummed replaces the last 4 bytes of rec with the CRC-32C of the rest,
// making a record whose checksum holds but whose body is malformed.
func checksummed(rec []byte) []byte {
	body := rec[:len(rec)-4]
	if len(rec) < 4 {
		body = rec
	}
	return binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// TestRecordChecksumCatchesDamage flips every bit of a format-3 record, and
// overwrites every byte with every other value: each is refused as damaged,
// never decoded into another event. (CRC-32C catches every error of up to
// 32 consecutive bits.)
func TestRecordChecksumCatchesDamage(t *testing.T) {
	for name, e := range recordEvents() {
		if len(e.Data) > 100 {
			continue // the long record adds time, not cases
		}
		t.Run(name, func(t *testing.T) {
			good := events.AppendRecord(nil, e)
			rec := bytes.Clone(good)
			for i := range rec {
				for v := range 256 {
					if byte(v) == good[i] {
						continue
					}
					rec[i] = byte(v)
					if got, err := events.DecodeRecord(rec); !errors.Is(err, events.ErrDamaged) {
						t.Fatalf("byte %d set to %#x: got %v, %v; want ErrDamaged", i, v, got, err)
					}
				}
				rec[i] = good[i]
			}
			for bit := range len(rec) * 8 {
				rec[bit/8] ^= 1 << (bit % 8)
				_, err := events.DecodeRecord(rec)
				rec[bit/8] ^= 1 << (bit % 8)
				if !errors.Is(err, events.ErrDamaged) {
					t.Fatalf("bit %d flipped: %v, want ErrDamaged", bit, err)
				}
				// Past the format byte, it is the checksum that refuses it.
				if want := fmt.Sprintf("checksum mismatch: stored %08x", binary.BigEndian.Uint32(rec[len(rec)-4:])); bit/8 >= 1 && bit/8 < len(rec)-4 && !strings.Contains(err.Error(), want) {
					t.Fatalf("bit %d flipped: %q does not say %q", bit, err, want)
				}
			}
		})
	}
}
