package commands_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"meshplane/commands"
	"meshplane/events"
)

// chainRE is a line's chain value, as mesh export writes it (last).
var chainRE = regexp.MustCompile(`,"chain":"sha256:[0-9a-f]{64}"`)

// TestImportChecksTheChain: the chain values an export carries must
// follow each other within the file: an export passes whole, from any
// position, and without any chain value; a line edited, removed, moved,
// or stripped of its value alone is refused, the first line refused the
// first whose value does not follow. Before, every one of these files was accepted.
func TestImportChecksTheChain(t *testing.T) {
	ctx := context.Background()
	src, store := setup(t)
	mesh(t, src)
	must(t, src, commands.SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"})
	all, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ev := range all {
		if ev.Chain.IsZero() {
			t.Fatalf("position %d has no chain value: the test proves nothing", ev.Position)
		}
		b, err := events.MarshalJSONLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	last := len(lines)
	edited := func(i int, f func(string) string) []string {
		out := append([]string(nil), lines...)
		out[i-1] = f(out[i-1])
		return out
	}
	for _, tc := range []struct {
		name  string
		lines []string
		bad   int    // the first line refused (0: none)
		want  string // what it says
		all   []int  // every line refused, when not bad alone
	}{
		{"the export", lines, 0, "", nil},
		{"an export --since", lines[3:], 0, "", nil},
		{"no chain value anywhere", strings.Split(chainRE.ReplaceAllString(strings.Join(lines, "\n"), ""), "\n"), 0, "", nil},
		{"the last line edited", edited(last, func(l string) string { return strings.Replace(l, `"6852"`, `"6853"`, 1) }), last,
			"chain value does not follow from the line before it (line " + strconv.Itoa(last-1) + ")", nil},
		{"the first line edited", edited(1, func(l string) string { return strings.Replace(l, `"actor":"operator:`, `"actor":"operator:x`, 1) }), 1,
			"it starts the chain, and is not the hash of its record", nil},
		{"a line edited", edited(3, func(l string) string { return strings.Replace(l, `"actor":"`, `"actor":"x`, 1) }), 3,
			"chain value does not follow from the line before it (line 2)", nil},
		{"a line added", append(append(append([]string(nil), lines[:2]...), strings.Replace(lines[1], lines[1][7:43], "0192f1d2-3a4b-7c5d-8e6f-00000000ffff", 1)), lines[2:]...), 3,
			"chain value does not follow from the line before it (line 2)", nil},
		{"a line removed", append(append([]string(nil), lines[:2]...), lines[3:]...), 3, "chain value does not follow from the line before it (line 2)", nil},
		{"two lines swapped", append(append(append([]string(nil), lines[:2]...), lines[3], lines[2]), lines[4:]...), 3, "does not follow", []int{3, 5}},
		{"a line's chain value removed", edited(3, func(l string) string { return chainRE.ReplaceAllString(l, "") }), 3,
			"no chain value after line 2, which has one", nil},
		{"a line's position changed", edited(2, func(l string) string { return strings.Replace(l, `"position":2`, `"position":20`, 1) }), 2, "does not follow", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := commands.NewImport(events.NewRegistry())
			var bad []string
			var badAt []int
			for i, l := range tc.lines {
				if _, err := im.Line([]byte(l), i+1); err != nil && strings.Contains(err.Error(), "chain") {
					bad, badAt = append(bad, err.Error()), append(badAt, i+1)
				}
			}
			switch {
			case tc.bad == 0 && len(bad) > 0:
				t.Fatalf("refused: %v", bad)
			case tc.bad > 0 && (len(bad) == 0 || badAt[0] != tc.bad || !strings.Contains(bad[0], tc.want)):
				t.Fatalf("refused lines %v: %v\nwant line %d first, saying %q", badAt, bad, tc.bad, tc.want)
			case tc.bad > 0 && tc.all == nil && len(bad) != 1:
				t.Fatalf("refused lines %v: %v\nwant line %d alone", badAt, bad, tc.bad)
			case tc.all != nil && fmt.Sprint(badAt) != fmt.Sprint(tc.all):
				t.Fatalf("refused lines %v: %v\nwant %v", badAt, bad, tc.all)
			}
		})
	}
}
