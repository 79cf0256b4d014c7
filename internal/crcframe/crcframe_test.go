package crcframe_test

import (
	"bytes"
	"errors"
	"testing"

	"meshplane/internal/crcframe"
)

func TestFrames(t *testing.T) {
	line := crcframe.Line(nil, []byte(`{"op":"ack","seq":7}`))
	if want := "{\"op\":\"ack\",\"seq\":7} crc32c "; !bytes.HasPrefix(line, []byte(want)) || line[len(line)-1] != '\n' {
		t.Fatalf("line %q", line)
	}
	sealed := crcframe.Seal([]byte("{\n  \"version\": 2\n}\n"))
	for _, tc := range []struct {
		name string
		fn   func() error
		want error // nil: accepted
	}{
		{"a line", func() error { _, err := crcframe.CheckLine(line[:len(line)-1]); return err }, nil},
		{"a line with a byte changed", func() error {
			b := bytes.Clone(line[:len(line)-1])
			b[3] ^= 1
			_, err := crcframe.CheckLine(b)
			return err
		}, crcframe.ErrMismatch},
		{"a line cut short", func() error { _, err := crcframe.CheckLine(line[:len(line)-3]); return err }, crcframe.ErrNoChecksum},
		{"a line without its checksum", func() error { _, err := crcframe.CheckLine([]byte(`{"op":"ack"}`)); return err }, crcframe.ErrNoChecksum},
		{"a checksum in upper case on a line", func() error {
			_, err := crcframe.CheckLine(bytes.ToUpper(line[:len(line)-1]))
			return err
		}, crcframe.ErrNoChecksum},
		{"a sealed file", func() error { _, _, err := crcframe.Unseal(sealed); return err }, nil},
		{"a sealed file with a byte changed", func() error {
			b := bytes.Clone(sealed)
			b[4] ^= 1
			_, _, err := crcframe.Unseal(b)
			return err
		}, crcframe.ErrMismatch},
		{"a checksum line cut short", func() error { _, _, err := crcframe.Unseal(sealed[:len(sealed)-2]); return err }, crcframe.ErrNoChecksum},
	} {
		if err := tc.fn(); tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if body, sealedOK, err := crcframe.Unseal([]byte("{}\n")); err != nil || sealedOK || string(body) != "{}\n" {
		t.Errorf("a file without a checksum line: %q %v %v, want it whole, not sealed", body, sealedOK, err)
	}
}

// FuzzFrames: whatever the bytes, checking never panics, and what is
// accepted frames back to exactly the bytes it came from.
func FuzzFrames(f *testing.F) {
	f.Add([]byte(`{"op":"log","next":1}`))
	f.Add(crcframe.Line(nil, []byte(`{"a":1}`)))
	f.Add(crcframe.Seal([]byte("{}\n")))
	f.Add([]byte("crc32c 00000000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if body, err := crcframe.CheckLine(b); err == nil {
			if got := crcframe.Line(nil, body); !bytes.Equal(got[:len(got)-1], b) {
				t.Fatalf("line %q accepted, body %q frames to %q", b, body, got)
			}
		}
		if !bytes.Contains(b, []byte("\n")) {
			got := crcframe.Line(nil, b)
			if body, err := crcframe.CheckLine(got[:len(got)-1]); err != nil || !bytes.Equal(body, b) {
				t.Fatalf("Line(%q) = %q, read back %q, %v", b, got, body, err)
			}
		}
		if body, sealed, err := crcframe.Unseal(b); err == nil && sealed {
			if got := crcframe.Seal(bytes.Clone(body)); !bytes.EqualFold(got, b) {
				t.Fatalf("file %q accepted, body %q seals to %q", b, body, got)
			}
		}
		if len(b) == 0 || b[len(b)-1] == '\n' {
			got := crcframe.Seal(bytes.Clone(b))
			if body, sealed, err := crcframe.Unseal(got); err != nil || !sealed || !bytes.Equal(body, b) {
				t.Fatalf("Seal(%q) = %q, read back %q %v %v", b, got, body, sealed, err)
			}
		}
	})
}
