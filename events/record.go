package events

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// The record format is how stores that keep bytes (boltstore) lay an event
// down. It is a persisted format: a change means a new format byte, and old
// records stay readable.
//
//	byte     format (1)
//	[16]byte id
//	uvarint  version
//	uvarint  position
//	uvarint  schema
//	varint   at, Unix nanoseconds
//	string   stream, type, actor, causation, correlation (each uvarint length, bytes)
//	bytes    data (uvarint length, bytes)
//
// Nothing may follow the data.
const recordFormat byte = 1

// errRecord wraps every decoding failure.
var errRecord = errors.New("events: corrupt record")

// AppendRecord appends the record form of e to b and returns the result.
func AppendRecord(b []byte, e Event) []byte {
	b = append(b, recordFormat)
	b = append(b, e.ID[:]...)
	b = binary.AppendUvarint(b, e.Version)
	b = binary.AppendUvarint(b, e.Position)
	b = binary.AppendUvarint(b, uint64(e.Schema))
	b = binary.AppendVarint(b, e.At.UnixNano())
	for _, s := range [...]string{e.Stream, e.Type, e.Actor, e.Causation, e.Correlation} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Data)))
	return append(b, e.Data...)
}

// DecodeRecord decodes a record made by AppendRecord. It copies what it
// keeps, so b may be reused (a bbolt page, say) once it returns. A truncated,
// oversized or trailing-garbage record is an error wrapping ErrInvalid.
func DecodeRecord(b []byte) (Event, error) {
	var e Event
	if len(b) < 1+16 {
		return e, recordErr("%d bytes, shorter than a header", len(b))
	}
	if b[0] != recordFormat {
		return e, recordErr("unknown format %d", b[0])
	}
	copy(e.ID[:], b[1:17])
	r := reader{b: b, off: 17}
	e.Version = r.uvarint()
	e.Position = r.uvarint()
	schema := r.uvarint()
	at := r.varint()
	var lens, offs [5]int
	var total int
	for i := range lens {
		lens[i] = r.length(MaxNameSize)
		offs[i] = r.off
		r.skip(lens[i])
		total += lens[i]
	}
	dataLen := r.length(MaxDataSize)
	if r.err != nil {
		return Event{}, r.err
	}
	if r.off+dataLen != len(b) {
		return Event{}, recordErr("data of %d bytes at offset %d, record is %d bytes", dataLen, r.off, len(b))
	}
	if schema > 1<<31 {
		return Event{}, recordErr("schema %d out of range", schema)
	}
	e.Schema = int(schema)
	e.At = time.Unix(0, at).UTC()
	// One string for the five names: they are substrings of it.
	all := make([]byte, 0, total)
	for i, n := range lens {
		all = append(all, b[offs[i]:offs[i]+n]...)
	}
	s := string(all)
	fields := [...]*string{&e.Stream, &e.Type, &e.Actor, &e.Causation, &e.Correlation}
	pos := 0
	for i, n := range lens {
		*fields[i] = s[pos : pos+n]
		pos += n
	}
	e.Data = append([]byte(nil), b[r.off:]...)
	return e, nil
}

func recordErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %w", errRecord, fmt.Sprintf(format, args...), ErrInvalid)
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || n != uvarintLen(v) {
		// Overlong encodings are refused: a record has one encoding.
		r.err = recordErr("bad uvarint at offset %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 || n != uvarintLen(zigzag(v)) {
		r.err = recordErr("bad varint at offset %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) length(max int) int {
	v := r.uvarint()
	if r.err == nil && v > uint64(max) {
		r.err = recordErr("length %d at offset %d over the limit of %d", v, r.off, max)
	}
	return int(v)
}

func (r *reader) skip(n int) {
	if r.err != nil {
		return
	}
	if n > len(r.b)-r.off {
		r.err = recordErr("field of %d bytes at offset %d runs past the record's %d", n, r.off, len(r.b))
		return
	}
	r.off += n
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// compile-time check that uuid.UUID is the 16 bytes the format assumes.
var _ [16]byte = uuid.UUID{}
