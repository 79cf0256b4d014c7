// Package gz is the gzip the bus's values travel in (the shared roster,
// declarations sent to agents that hold a roster): one encoder, and one
// decoder bounded in what it inflates, used by the bus and by the
// simulator's count of what the bus carries.
package gz

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge means a value inflates beyond the bound it was read with.
var ErrTooLarge = errors.New("gz: inflates beyond its bound")

// Compressed reports whether b starts as gzip does (its two magic bytes,
// which no JSON value starts with).
func Compressed(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Compress is b gzipped at the default level.
func Compress(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // a bytes.Buffer takes every write
	_ = zw.Close()
	return buf.Bytes()
}

// Decompress is b gunzipped, refused (ErrTooLarge) beyond max bytes
// before more is read: a small value that inflates to gigabytes is never
// held whole. What is not gzip, or is damaged, is an error saying so.
func Decompress(b []byte, max int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gz: not gzip (%d bytes): %w", len(b), err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, max+1))
	if err != nil {
		return nil, fmt.Errorf("gz: gunzip: %w", err)
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return raw, nil
}
