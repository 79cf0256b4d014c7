package events

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/google/uuid"
)

// The record format is how stores that keep bytes (boltstore) lay an event
// down. It is a persisted format: a change means a new format byte, and old
// records stay readable.
//
// Format 2, written since records carry a checksum:
//
//	byte     format (2)
//	[16]byte id
//	uvarint  version
//	uvarint  position
//	uvarint  schema
//	varint   at, Unix nanoseconds
//	string   stream, type, actor, causation, correlation (each uvarint length, bytes)
//	bytes    data (uvarint length, bytes)
//	[4]byte  CRC-32C (Castagnoli) of every byte before it, big-endian
//
// Format 1, written before, is the same without the checksum: nothing follows
// the data. DecodeRecord reads both; AppendRecord writes format 2 only. A
// store that knows all its records are format 2 refuses a format-1 record
// (RecordFormat tells which a record is), so damage to the format byte
// cannot turn the checksum off.
//
// The checksum is checked before anything else is read, so damage anywhere
// in a format-2 record is reported as damage (ErrDamaged), never decoded
// into a wrong value. As with nats-server's filestore, the store's own
// checks (bbolt checksums only its meta pages) do not cover a record's
// bytes; this does.
const (
	// RecordFormatPlain is format 1: no checksum. Read, never written.
	RecordFormatPlain byte = 1
	// RecordFormatChecked is format 2: a CRC-32C follows the data. Written
	// by AppendRecord.
	RecordFormatChecked byte = 2
)

// ErrDamaged means stored bytes failed their checks: a record whose
// checksum does not match or that does not decode, an index that disagrees
// with the records, a store file its engine cannot read. What was read is
// never returned beside it. Stores wrap it with where the damage is
// (position, stream and version where known); a record that fails to decode
// also wraps ErrInvalid.
var ErrDamaged = errors.New("stored data damaged")

// crcTable is CRC-32C's: hardware-accelerated on amd64 and arm64.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// crcSize is the length of a format-2 record's checksum.
const crcSize = 4

// errRecord wraps every decoding failure.
var errRecord = errors.New("events: corrupt record")

// AppendRecord appends the record form of e (format 2, with its checksum)
// to b and returns the result.
func AppendRecord(b []byte, e Event) []byte {
	start := len(b)
	b = appendBody(b, RecordFormatChecked, e)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], crcTable))
}

// appendBody appends the record form of e without a checksum, under format.
func appendBody(b []byte, format byte, e Event) []byte {
	b = append(b, format)
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

// RecordFormat returns the format byte of record b (0 if b is empty). It
// does not check the record.
func RecordFormat(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// DecodeRecord decodes a record made by AppendRecord, in format 2 or the
// older format 1. It copies what it keeps, so b may be reused (a bbolt page,
// say) once it returns. A record whose checksum does not match, or that is
// truncated, oversized or followed by garbage, is an error wrapping both
// ErrDamaged and ErrInvalid, and no event.
func DecodeRecord(b []byte) (Event, error) {
	var e Event
	if len(b) < 1+16 {
		return e, recordErr("%d bytes, shorter than a header", len(b))
	}
	switch b[0] {
	case RecordFormatPlain:
	case RecordFormatChecked:
		if len(b) < 1+16+crcSize {
			return e, recordErr("%d bytes, shorter than a header and checksum", len(b))
		}
		body := b[:len(b)-crcSize]
		want := binary.BigEndian.Uint32(b[len(body):])
		if got := crc32.Checksum(body, crcTable); got != want {
			return e, recordErr("checksum mismatch: stored %08x, computed %08x over %d bytes", want, got, len(body))
		}
		b = body
	default:
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
	return &recordError{fmt.Sprintf(format, args...)}
}

// recordError is a record DecodeRecord refused: it wraps errRecord,
// ErrDamaged and ErrInvalid, and says only what was wrong.
type recordError struct{ msg string }

func (e *recordError) Error() string { return "corrupt record: " + e.msg }

func (e *recordError) Is(target error) bool {
	return target == errRecord || target == ErrDamaged || target == ErrInvalid
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
