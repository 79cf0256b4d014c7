package render_test

import (
	"bytes"
	"testing"

	"meshplane/api"
	"meshplane/render"
)

// TestLogChunkEscapes: a log's bytes reach the terminal with every
// control character but newline and tab escaped, its lines kept; a cut
// tail says so first.
func TestLogChunkEscapes(t *testing.T) {
	tests := []struct {
		name string
		ch   api.LogChunk
		want string
	}{
		{"plain lines", api.LogChunk{Data: []byte("serving on :8080\n\tat x\n")}, "serving on :8080\n\tat x\n"},
		{"hostile bytes", api.LogChunk{Data: []byte("\x1b[2Jred\u202e\x00\xff\n")}, "\\u001b[2Jred\\u202e\\u0000\\xff\n"},
		{"a cut tail", api.LogChunk{Data: []byte("z\n"), Cut: true}, "(earlier lines left out: one answer holds at most 256 KiB of log; ask a smaller --tail)\nz\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := render.LogChunk(&b, tt.ch); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("%q\nwant %q", b.String(), tt.want)
			}
		})
	}
}
