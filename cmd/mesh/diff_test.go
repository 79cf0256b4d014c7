package main

import (
	"strings"
	"testing"
)

// TestDiffRefusals: a moment that does not parse, or no --from, is bad
// usage before anything starts; a position past the head, a time after
// now, or --from after --to is refused by the diff itself, locally and
// against a controller alike.
func TestDiffRefusals(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			flags, stop := m.start(t, t.TempDir())
			defer stop()
			if code, out, errOut := mesh(t, append([]string{"node", "register", "a", "b"}, flags...)...); code != exitOK {
				t.Fatalf("register: exit %d\n%s%s", code, out, errOut)
			}
			for _, tc := range []struct {
				args []string
				code int
				err  string
			}{
				{[]string{"diff"}, exitUsage, "--from"},
				{[]string{"diff", "--from", "yesterday"}, exitUsage, "neither a time"},
				{[]string{"diff", "--from", "0", "--to", "soon"}, exitUsage, "--to"},
				{[]string{"diff", "--from", "0", "extra"}, exitUsage, ""},
				{[]string{"diff", "--from", "3"}, exitRejected, "past the store's last event (2)"},
				{[]string{"diff", "--from", "2", "--to", "1"}, exitRejected, "after --to"},
				{[]string{"diff", "--from", "2999-01-01T00:00:00Z"}, exitRejected, "after now"},
				{[]string{"diff", "--from", "1"}, exitOK, ""},
			} {
				code, out, errOut := mesh(t, append(tc.args, flags...)...)
				if code != tc.code || !strings.Contains(errOut, tc.err) {
					t.Errorf("mesh %s: exit %d, want %d naming %q\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.err, out, errOut)
				}
				if code == exitOK && !strings.Contains(out, "node b\n  #2 ") {
					t.Errorf("mesh %s: no registration of b:\n%s", strings.Join(tc.args, " "), out)
				}
			}
		})
	}
}
