package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"meshplane/commands"
)

// TestErrorsEscaped: an error quoting what a node, a file or history
// said is printed with its control characters escaped: no escape sequence
// reaches the terminal; a refusal (one sentence) has its newlines escaped
// too, so no forged line starts (another error keeps its own lines).
func TestErrorsEscaped(t *testing.T) {
	const hostile = "\x1b[2J\x1b[31mFAKE\n999 2026-11-30 10:00:00 n2 node.removed operator:admin\u202e\x7f"
	for _, c := range []struct {
		name    string
		err     error
		oneLine bool
	}{
		{"refusal", &commands.Rejection{Code: commands.CodeInvalid, Msg: "report from n1: " + hostile}, true},
		{"refusal, hostile code", &commands.Rejection{Code: "x\x1b[2J\n999 forged", Msg: "m"}, true},
		{"wrapped", fmt.Errorf("read node n1: %w", errors.New(hostile)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			e := &env{stdout: &out, stderr: &errOut}
			root := &cobra.Command{Use: "mesh", RunE: func(*cobra.Command, []string) error { return c.err }}
			e.runRoot(context.Background(), root, nil)
			got := errOut.String()
			if strings.ContainsAny(got, "\x1b\x7f\u202e") {
				t.Errorf("stderr holds a raw control: %q", got)
			}
			for _, line := range strings.Split(got, "\n") {
				if c.oneLine && strings.HasPrefix(line, "999 ") {
					t.Errorf("stderr holds a forged line: %q", got)
				}
			}
		})
	}
}
