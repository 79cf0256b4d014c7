package gz_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"meshplane/internal/gz"
)

func TestRoundTripAndBounds(t *testing.T) {
	in := []byte(strings.Repeat(`{"name":"web","image":"forge/web:1"}`, 100))
	z := gz.Compress(in)
	if !gz.Compressed(z) || gz.Compressed(in) || len(z) >= len(in) {
		t.Fatalf("compressed %d bytes to %d (magic %v, of the input %v)", len(in), len(z), gz.Compressed(z), gz.Compressed(in))
	}
	out, err := gz.Decompress(z, int64(len(in)))
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("round trip: %v, equal %v", err, bytes.Equal(out, in))
	}
	if _, err := gz.Decompress(z, int64(len(in))-1); !errors.Is(err, gz.ErrTooLarge) {
		t.Fatalf("a bound one byte short: %v, want ErrTooLarge", err)
	}
	for _, bad := range [][]byte{nil, []byte("{}"), z[:len(z)/2], append(append([]byte{}, z[:10]...), 0xff, 0xff)} {
		if _, err := gz.Decompress(bad, 1<<20); err == nil {
			t.Errorf("Decompress(%q): no error", bad)
		}
	}
}

func FuzzDecompress(f *testing.F) {
	f.Add(gz.Compress([]byte(`{"node":"n1"}`)))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := gz.Decompress(b, 1<<16)
		if err == nil && len(out) > 1<<16 {
			t.Fatalf("%d bytes past a bound of %d", len(out), 1<<16)
		}
	})
}
