// Package crcframe is the one checksum framing of the files the node side
// keeps (the agent's outbox log and its legacy files, the simulated
// runtime's state) and the one CRC-32C (Castagnoli) table of the module.
//
// Two frames, both readable with a text tool:
//
//   - a line: a JSON object, then " crc32c XXXXXXXX" and a newline, the
//     CRC-32C of the bytes before the space, in lower-case hex (Line,
//     CheckLine): one record of a log, so that a torn last line is told
//     from a damaged one;
//   - a sealed file: its body, ending in a newline, then a last line
//     "crc32c XXXXXXXX" and a newline, the CRC-32C of the body (Seal,
//     Unseal).
//
// What fails is an error saying what was wrong (ErrNoChecksum, ErrMismatch);
// the caller wraps it with its own sentinel (the outbox's ErrCorrupt, the
// runtime's ErrDamaged). No I/O.
package crcframe

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Table is the module's one CRC-32C (Castagnoli) table: hardware-accelerated
// on amd64 and arm64.
var Table = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, Table) }

var (
	// ErrNoChecksum means a frame has no checksum where one must be, or
	// one that is not 8 lower-case hex digits.
	ErrNoChecksum = errors.New("no checksum")
	// ErrMismatch means a frame's checksum is not that of its bytes.
	ErrMismatch = errors.New("checksum mismatch")
)

const (
	lineSuffix = " crc32c "
	sealPrefix = "crc32c "
	hexDigits  = 8
)

// Line appends to b the line of body (one JSON value, no newline): body,
// " crc32c ", its checksum and a newline.
func Line(b, body []byte) []byte {
	b = append(b, body...)
	b = append(b, lineSuffix...)
	return fmt.Appendf(b, "%08x\n", Checksum(body))
}

// CheckLine checks one line (without its newline) and returns its body.
func CheckLine(line []byte) ([]byte, error) {
	i := bytes.LastIndex(line, []byte(lineSuffix))
	if i < 0 || len(line)-i-len(lineSuffix) != hexDigits {
		return nil, fmt.Errorf("no checksum at the end of the line: %w", ErrNoChecksum)
	}
	sum, ok := parseHex(line[i+len(lineSuffix):], false)
	if !ok {
		return nil, fmt.Errorf("checksum %q: %w", line[i+len(lineSuffix):], ErrNoChecksum)
	}
	body := line[:i]
	if Checksum(body) != sum {
		return nil, ErrMismatch
	}
	return body, nil
}

// Seal appends to body (ending in a newline) its checksum line.
func Seal(body []byte) []byte {
	return fmt.Appendf(body, "%s%08x\n", sealPrefix, Checksum(body))
}

// Unseal splits b into its body and its checksum line, and checks it. A
// b whose last line is no checksum line is returned whole with sealed
// false and no error: whether that is allowed is the caller's to say.
func Unseal(b []byte) (body []byte, sealed bool, err error) {
	i := bytes.LastIndexByte(bytes.TrimSuffix(b, []byte("\n")), '\n')
	last := b[i+1:]
	if !bytes.HasPrefix(last, []byte(sealPrefix)) {
		return b, false, nil
	}
	if len(last) != len(sealPrefix)+hexDigits+1 || last[len(last)-1] != '\n' {
		return nil, true, fmt.Errorf("checksum line %.40q: %w", last, ErrNoChecksum)
	}
	sum, ok := parseHex(last[len(sealPrefix):len(last)-1], true)
	if !ok {
		return nil, true, fmt.Errorf("checksum line %.40q: %w", last, ErrNoChecksum)
	}
	body = b[:i+1]
	if Checksum(body) != sum {
		return nil, true, ErrMismatch
	}
	return body, true, nil
}

// parseHex reads 8 hex digits: lower-case, or either case when upper
// (a sealed file's checksum line has always been read so).
func parseHex(h []byte, upper bool) (uint32, bool) {
	if len(h) != hexDigits {
		return 0, false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (!upper || c < 'A' || c > 'F') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(h), 16, 32)
	return uint32(v), err == nil
}
