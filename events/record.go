package events

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/google/uuid"

	"meshplane/internal/crcframe"
)

// The record format is how stores that keep bytes (boltstore) lay an event
// down. It is a persisted format: a change means a new format byte, and old
// records stay readable. DecodeRecord reads formats 1 and 3; AppendRecord
// writes format 3 only.
//
// Format 1, written before records carried a checksum:
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
// Format 3 writes the names after the stream compactly, since a quiet pass's
// whole record is a few hundred bytes and its names were a third of them
// (BENCHMARKS.md, "An idle pass"), and ends with a checksum:
//
//	byte     format (3)
//	[16]byte id
//	uvarint  version, position, schema
//	varint   at
//	string   stream
//	uvarint  type:        0, then a string; or k ≥ 1, recordTypes[k-1]
//	uvarint  actor:       0, ""; 1, "controller"; 2, "agent:<node>" where the
//	                      stream is "node-<node>"; 3, "operator:" then a
//	                      string; k ≥ 4, the k-4 bytes that follow
//	uvarint  causation:   0, ""; 1, then a UUID's 16 bytes, whose canonical
//	                      text form (36 characters, lower case) it is;
//	                      k ≥ 2, the k-2 bytes that follow
//	uvarint  correlation: as causation
//	bytes    data
//	[4]byte  CRC-32C (Castagnoli) of every byte before it, big-endian
//
// A short form is written whenever it decodes to exactly the same string, and
// only then, so every event round-trips and a record has one encoding (a
// name written long where a short form exists is refused, as an overlong
// varint is). Nothing may follow the data (and the checksum) in either
// format. Format 2 (format 1 with a checksum) was never released and is not
// read.
//
// The checksum is checked before anything else is read, so damage anywhere
// in a format-3 record is reported as damage (ErrDamaged), never decoded
// into a wrong value. As with nats-server's filestore, the store's own
// checks (bbolt checksums only its meta pages) do not cover a record's
// bytes; this does. A store that knows all its records are checksummed
// refuses a format-1 record (RecordFormat tells which a record is), so
// damage to the format byte cannot turn the checksum off.
const (
	// RecordFormatPlain is format 1: no checksum. Read, never written.
	RecordFormatPlain byte = 1
	// RecordFormatChecked is format 3: compact names, and a CRC-32C after
	// the data. Written by AppendRecord.
	RecordFormatChecked byte = 3
)

// ErrDamaged means stored bytes failed their checks: a record whose
// checksum does not match or that does not decode, an index that disagrees
// with the records, a store file its engine cannot read. What was read is
// never returned beside it. Stores wrap it with where the damage is
// (position, stream and version where known); a record that fails to decode
// also wraps ErrInvalid.
var ErrDamaged = errors.New("stored data damaged")

// crcSize is the length of a format-3 record's checksum.
const crcSize = 4

// recordTypes are the event types format 3 writes as a number (their index
// plus 1). It is a persisted table: append, never reorder or remove; a
// type not in it is written as a string.
var recordTypes = [...]string{
	TypeNodeRegistered, TypeNodeAdopted, TypeNodeSettingSet, TypeModuleDefined,
	TypeModuleAssigned, TypeModuleReleased, TypeModuleTaken, TypeArtifactRecorded,
	TypeDeclarationComposed, TypeDeclarationComposeFailed, TypeDeclarationPushed,
	TypeDeclarationPushFailed, TypeApplyReported, TypeReportDeliveredLate,
	TypeModuleDeployed,
}

// recordTypeCode is recordTypes inverted.
var recordTypeCode = func() map[string]uint64 {
	m := make(map[string]uint64, len(recordTypes))
	for i, t := range recordTypes {
		m[t] = uint64(i + 1)
	}
	return m
}()

// Format 3's codes for an actor and for an id (causation, correlation). A
// code at or above actorString (idString) is a string of code-actorString
// (code-idString) bytes, which follow.
const (
	actorEmpty    = 0 // ""
	actorControl  = 1 // "controller"
	actorAgent    = 2 // "agent:" + the node of the stream
	actorOperator = 3 // "operator:" + a string (uvarint length, bytes)
	actorString   = 4
	idEmpty       = 0 // ""
	idUUID        = 1 // a UUID's 16 bytes
	idString      = 2

	actorControlS  = "controller"
	actorPrefixAg  = "agent:"
	actorPrefixOp  = "operator:"
	recordNodePref = "node-"
)

// errRecord wraps every decoding failure.
var errRecord = errors.New("events: corrupt record")

// AppendRecord appends the record form of e (format 3, with its checksum)
// to b and returns the result.
func AppendRecord(b []byte, e Event) []byte {
	start := len(b)
	b = appendCompact(b, e)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], crcframe.Table))
}

// appendCompact appends format 3's body: everything before the checksum.
func appendCompact(b []byte, e Event) []byte {
	b = append(b, RecordFormatChecked)
	b = append(b, e.ID[:]...)
	b = binary.AppendUvarint(b, e.Version)
	b = binary.AppendUvarint(b, e.Position)
	b = binary.AppendUvarint(b, uint64(e.Schema))
	b = binary.AppendVarint(b, e.At.UnixNano())
	b = appendString(b, e.Stream)
	if k, ok := recordTypeCode[e.Type]; ok {
		b = binary.AppendUvarint(b, k)
	} else {
		b = appendString(binary.AppendUvarint(b, 0), e.Type)
	}
	node, isNode := strings.CutPrefix(e.Stream, recordNodePref)
	switch {
	case e.Actor == "":
		b = binary.AppendUvarint(b, actorEmpty)
	case e.Actor == actorControlS:
		b = binary.AppendUvarint(b, actorControl)
	case isNode && e.Actor == actorPrefixAg+node:
		b = binary.AppendUvarint(b, actorAgent)
	case strings.HasPrefix(e.Actor, actorPrefixOp):
		b = appendString(binary.AppendUvarint(b, actorOperator), e.Actor[len(actorPrefixOp):])
	default:
		b = binary.AppendUvarint(b, actorString+uint64(len(e.Actor)))
		b = append(b, e.Actor...)
	}
	b = appendID(b, e.Causation)
	b = appendID(b, e.Correlation)
	b = binary.AppendUvarint(b, uint64(len(e.Data)))
	return append(b, e.Data...)
}

// appendRecord1 appends the format-1 record of e: what stores wrote before
// the checksum, kept so tests can make old records.
func appendRecord1(b []byte, e Event) []byte {
	b = append(b, RecordFormatPlain)
	b = append(b, e.ID[:]...)
	b = binary.AppendUvarint(b, e.Version)
	b = binary.AppendUvarint(b, e.Position)
	b = binary.AppendUvarint(b, uint64(e.Schema))
	b = binary.AppendVarint(b, e.At.UnixNano())
	for _, s := range [...]string{e.Stream, e.Type, e.Actor, e.Causation, e.Correlation} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Data)))
	return append(b, e.Data...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendID writes a causation or correlation: 16 bytes when it is a UUID in
// canonical form, else the string.
func appendID(b []byte, s string) []byte {
	if s == "" {
		return binary.AppendUvarint(b, idEmpty)
	}
	if len(s) == 36 {
		if id, err := uuid.Parse(s); err == nil && id.String() == s {
			b = binary.AppendUvarint(b, idUUID)
			return append(b, id[:]...)
		}
	}
	b = binary.AppendUvarint(b, idString+uint64(len(s)))
	return append(b, s...)
}

// RecordFormat returns the format byte of record b (0 if b is empty). It
// does not check the record.
func RecordFormat(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// DecodeRecord decodes a record made by AppendRecord, in format 3 or the
// older format 1. It copies what it keeps, so b may be reused (a bbolt page,
// say) once it returns. A record whose checksum does not match, or that is
// truncated, oversized, followed by garbage or holds a code it does not
// know, is an error wrapping both ErrDamaged and ErrInvalid, and no event.
func DecodeRecord(b []byte) (Event, error) {
	b, err := recordBody(b)
	if err != nil {
		return Event{}, err
	}
	var e Event
	copy(e.ID[:], b[1:17])
	r := reader{b: b, off: 17}
	e.Version = r.uvarint()
	e.Position = r.uvarint()
	schema := r.uvarint()
	at := r.varint()
	// One string for the names: they are substrings of it, made with one
	// allocation of their exact size (setNames). pieces are what each name
	// is made of, in order; a type known by its code is the table's own
	// string, and a UUID is written out as text straight into the names.
	// The helpers return the pieces and this function keeps them, so that
	// they stay on its stack.
	var (
		pieces [8][]byte
		np     int
		lens   [5]int
		uuids  [2][36]byte
		typ    string // the type, when written by its code
	)
	name := func(i int, p []byte) {
		pieces[np] = p
		np++
		lens[i] += len(p)
	}
	if b[0] == RecordFormatPlain {
		for i := range lens {
			name(i, r.bytes(MaxNameSize))
		}
	} else {
		stream := r.bytes(MaxNameSize)
		name(0, stream)
		var t []byte
		if t, typ = readType(&r); t != nil {
			name(1, t)
		}
		prefix, actor := readActor(&r, stream)
		if prefix != "" {
			name(2, []byte(prefix))
		}
		if actor != nil {
			name(2, actor)
		}
		for i := 3; i < 5; i++ { // causation, correlation
			if id := readID(&r, &uuids[i-3]); id != nil {
				name(i, id)
			}
		}
	}
	total := namesSize(&r, lens)
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
	e.setNames(pieces[:np], lens, total)
	if typ != "" {
		e.Type = typ
	}
	e.Data = append([]byte(nil), b[r.off:]...)
	return e, nil
}

// recordBody checks a record's header and format, and a checked record's
// checksum, and returns the record without its checksum.
func recordBody(b []byte) ([]byte, error) {
	if len(b) < 1+16 {
		return nil, recordErr("%d bytes, shorter than a header", len(b))
	}
	switch b[0] {
	case RecordFormatPlain:
		return b, nil
	case RecordFormatChecked:
		if len(b) < 1+16+crcSize {
			return nil, recordErr("%d bytes, shorter than a header and checksum", len(b))
		}
		body := b[:len(b)-crcSize]
		want := binary.BigEndian.Uint32(b[len(body):])
		if got := crc32.Checksum(body, crcframe.Table); got != want {
			return nil, recordErr("checksum mismatch: stored %08x, computed %08x over %d bytes", want, got, len(body))
		}
		return body, nil
	}
	return nil, recordErr("unknown format %d", b[0])
}

// readType reads a checked record's type: by its code (typ, the table's
// string), or a string no code has (t).
func readType(r *reader) (t []byte, typ string) {
	switch k := r.uvarint(); {
	case k == 0:
		t = r.bytes(MaxNameSize)
		if _, known := recordTypeCode[string(t)]; known {
			r.fail("type %q written as a string, not by its code", t)
		}
		return t, ""
	case k <= uint64(len(recordTypes)):
		return nil, recordTypes[k-1]
	default:
		r.fail("unknown type code %d at offset %d", k, r.off)
	}
	return nil, ""
}

// readActor reads a checked record's actor, on stream: by its code, or a
// string no code makes. It is a prefix (the controller's name, or
// "operator:" or "agent:"), a name, or both; "" and nil are none.
func readActor(r *reader, stream []byte) (prefix string, name []byte) {
	node, isNode := bytes.CutPrefix(stream, []byte(recordNodePref))
	switch k := r.uvarint(); {
	case k == actorEmpty:
	case k == actorControl:
		return actorControlS, nil
	case k == actorAgent:
		if !isNode {
			r.fail("agent actor on stream %q, not a node's", stream)
		}
		return actorPrefixAg, node
	case k == actorOperator:
		return actorPrefixOp, r.bytes(MaxNameSize - len(actorPrefixOp))
	case k-actorString > MaxNameSize:
		r.fail("actor of %d bytes, over the limit of %d", k-actorString, MaxNameSize)
	default:
		actor := r.take(int(k - actorString))
		if len(actor) == 0 || string(actor) == actorControlS || bytes.HasPrefix(actor, []byte(actorPrefixOp)) ||
			(isNode && string(actor) == actorPrefixAg+string(node)) {
			r.fail("actor %q written as a string, not by its code", actor)
		}
		return "", actor
	}
	return "", nil
}

// readID reads causation or correlation in a checked record: nothing, a
// UUID (written out as text into text), or a string that is no UUID.
func readID(r *reader, text *[36]byte) []byte {
	switch k := r.uvarint(); {
	case k == idEmpty:
	case k == idUUID:
		if raw := r.take(16); r.err == nil {
			encodeUUID(text, uuid.UUID(raw))
			return text[:]
		}
	case k-idString > MaxNameSize:
		r.fail("name of %d bytes, over the limit of %d", k-idString, MaxNameSize)
	default:
		v := r.take(int(k - idString))
		if len(v) == 0 {
			r.fail("empty name written as a string")
		}
		if len(v) == 36 {
			if id, err := uuid.ParseBytes(v); err == nil && id.String() == string(v) {
				r.fail("UUID %q written as a string", v)
			}
		}
		return v
	}
	return nil
}

// namesSize is the names' bytes, each name checked against MaxNameSize.
func namesSize(r *reader, lens [5]int) int {
	total := 0
	for i, n := range lens {
		if n > MaxNameSize {
			r.fail("name %d of %d bytes, over the limit of %d", i, n, MaxNameSize)
		}
		total += n
	}
	return total
}

// setNames makes the one string of the names' pieces (total bytes) and
// sets e's five names to its parts, of lens bytes each.
func (e *Event) setNames(pieces [][]byte, lens [5]int, total int) {
	var all strings.Builder
	all.Grow(total)
	for _, p := range pieces {
		all.Write(p)
	}
	s := all.String()
	fields := [...]*string{&e.Stream, &e.Type, &e.Actor, &e.Causation, &e.Correlation}
	pos := 0
	for i, n := range lens {
		*fields[i] = s[pos : pos+n]
		pos += n
	}
}

// encodeUUID writes id's canonical text form (as uuid.UUID.String) to dst.
func encodeUUID(dst *[36]byte, id uuid.UUID) {
	hex.Encode(dst[0:8], id[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], id[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], id[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], id[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:], id[10:])
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

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = recordErr(format, args...)
	}
}

// bytes reads a length-prefixed string of at most max bytes; nil after an
// error.
func (r *reader) bytes(max int) []byte { return r.take(r.length(max)) }

// take reads n bytes; nil after an error.
func (r *reader) take(n int) []byte {
	at := r.off
	r.skip(n)
	if r.err != nil {
		return nil
	}
	return r.b[at : at+n]
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
