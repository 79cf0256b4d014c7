package agent_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"meshplane/agent"
)

func TestEscapeLog(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain lines stay", "cat: /no/such/file: No such file or directory\n", 0, "cat: /no/such/file: No such file or directory\n"},
		{"terminal escapes", "\x1b[31mred\x1b[0m\r\n", 0, `\x1b[31mred\x1b[0m\r` + "\n"},
		{"invalid utf-8", "a\xffb", 0, `a\xffb`},
		{"backslash is doubled", `a\x1b`, 0, `a\\x1b`},
		{"bidi override", "a\u202eb", 0, `a\u202eb`},
		{"cut at the front", "first line\nlast line\n", 10, "last line\n"},
		{"cut on a rune", "ééé", 3, "é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agent.EscapeLog(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("EscapeLog(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if !utf8.ValidString(got) || (tt.max > 0 && len(got) > tt.max) {
				t.Errorf("EscapeLog(%q, %d) = %q: invalid or too long", tt.in, tt.max, got)
			}
			if strings.ContainsAny(got, "\x1b\r\x00") {
				t.Errorf("a control character left in %q", got)
			}
		})
	}
}
