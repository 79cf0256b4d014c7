package commands_test

import (
	"errors"
	"strings"
	"testing"

	"meshplane/commands"
)

func TestCheckOperator(t *testing.T) {
	for _, tc := range []struct {
		name, op, want string // want "" when accepted
	}{
		{"a user", "alice", ""},
		{"an address", "alice@example.org", ""},
		{"a name with a space", "Jane Doe", ""},
		{"beyond ASCII", "Zoë", ""},
		{"the longest", strings.Repeat("a", commands.MaxOperatorLen), ""},
		{"none", "", "names no operator"},
		{"spaces", "   ", "names no operator"},
		{"a NUL", "a\x00b", `operator "a\x00b": byte 1 is U+0000: no control or format characters`},
		{"a newline", "alice\nmallory", "byte 5 is U+000A"},
		{"a bidirectional override", "alice\u202egnp.exe", "byte 5 is U+202E"},
		{"not UTF-8", "a\xffb", "not valid UTF-8"},
		{"a replacement character", "a\ufffdb", "byte 1 is U+FFFD"},
		{"a space at the end", "alice ", "a space at the start or the end"},
		{"5,000 bytes", strings.Repeat("o", 5000), `"oooooooooooooooooooooooooooooooooooooooo"… (5000 bytes): 5000 bytes, over the limit of 128`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := commands.CheckOperator(tc.op)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var rej *commands.Rejection
			if !errors.As(err, &rej) || rej.Code != commands.CodeInvalid || !strings.Contains(rej.Msg, tc.want) {
				t.Fatalf("got %v, want an invalid rejection saying %q", err, tc.want)
			}
		})
	}
}
