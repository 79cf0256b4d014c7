package importfile_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"meshplane/commands"
	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/events/export"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// exported is the export of a simulated mesh's history (registrations,
// definitions, compositions, applies, faults), as mesh export writes it.
func exported(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	src := memstore.New()
	defer src.Close()
	if err := sim.New(src).Generate(ctx, sim.DefaultWorkload, 300); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := export.Write(ctx, src, 0, &b, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// chainRE is a line's chain value, as mesh export writes it (last).
var chainRE = regexp.MustCompile(`,"chain":"sha256:[0-9a-f]{64}"`)

// unchained is an export without its chain values: a file that is not
// checked for them, as one written by hand.
func unchained(export string) string { return chainRE.ReplaceAllString(export, "") }

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// into is an import of path into store, refusing a file with a bad line:
// both passes, what the file needs settled against store.
func into(ctx context.Context, store events.Store, path string) (importfile.Result, error) {
	c, err := importfile.Check(ctx, path, events.NewRegistry(), importfile.Store{Open: func() (events.Store, error) { return nopCloser{store}, nil }})
	if err != nil {
		return importfile.Result{}, err
	}
	defer c.Close()
	if len(c.Bad) > 0 {
		return importfile.Result{}, c.Bad[0]
	}
	return c.Append(ctx, nil)
}

// nopCloser is a store that its import does not close.
type nopCloser struct{ events.Store }

func (nopCloser) Close() error { return nil }

// An import that stopped midway is finished by importing the whole file:
// the batches the store holds in part are appended one event at a time.
func TestImportResumes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	b := exported(t)
	write(t, full, b)
	lines := strings.SplitAfter(b, "\n")
	lines = lines[:len(lines)-1] // after the last newline
	half := filepath.Join(dir, "half.jsonl")
	// The first half, but every other assignment and setting (an event
	// follows what it needs, or import refuses it): batches of one stream
	// are cut.
	var part []string
	for i := 0; i < len(lines)/2; i++ {
		if i%2 == 0 || !strings.Contains(lines[i], `"type":"module.assigned"`) && !strings.Contains(lines[i], `"type":"node.setting-set"`) {
			part = append(part, lines[i])
		}
	}
	// Lines left out break the chain: the part is written without it.
	write(t, half, unchained(strings.Join(part, "")))
	st := memstore.New()
	defer st.Close()
	first, err := into(ctx, st, half)
	if err != nil {
		t.Fatal(err)
	}
	second, err := into(ctx, st, full)
	if err != nil {
		t.Fatal(err)
	}
	if first.Appended != len(part) || second.Appended != len(lines)-len(part) || second.Read != len(lines) {
		t.Errorf("appended %d then %d of %d; want %d then %d", first.Appended, second.Appended, second.Read, len(part), len(lines)-len(part))
	}
}

// A file that changes between the pass that checks and the pass that
// appends stops the import at the first line that is not the one checked.
func TestImportRefusesAFileChangedBetweenPasses(t *testing.T) {
	ctx := context.Background()
	export := exported(t)
	first := export[:strings.Index(export, "\n")+1]
	file := filepath.Join(t.TempDir(), "in.jsonl")
	for _, tc := range []struct{ name, now string }{
		{"a line changed", strings.Replace(export, `"schema":1`, `"schema":1 `, 1)},
		{"lines gone", export[:len(export)/2]},
		{"a line added", export + first},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(t, file, export)
			st := memstore.New()
			defer st.Close()
			c, err := importfile.Check(ctx, file, events.NewRegistry(), importfile.Store{Open: func() (events.Store, error) { return st, nil }})
			if err != nil || len(c.Bad) > 0 {
				t.Fatalf("check: %v %v", c, err)
			}
			write(t, file, tc.now)
			if _, err := c.Append(ctx, nil); !errors.Is(err, commands.ErrImportChanged) {
				t.Fatalf("import of a changed file: %v, want ErrImportChanged", err)
			}
		})
	}
}

// Check opens no store for a file that needs nothing of it, nor one that
// is None (settling against an empty store); Append opens it; blank lines
// are passed over; Listed tells at most max bad lines.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	export := exported(t)
	lines := strings.SplitAfter(export, "\n")
	lines = lines[:len(lines)-1]
	var apply string
	for _, l := range lines {
		if strings.Contains(l, `"type":"apply.reported"`) {
			apply = l
			break
		}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		body    string
		none    bool
		opens   int // by Check
		bad     []int
		appends bool
	}{
		{"a whole export", export, false, 0, nil, true},
		{"a whole export into none", export, true, 0, nil, true},
		{"an apply alone", apply, false, 1, []int{1}, false},
		{"an apply alone into none", apply, true, 0, []int{1}, false},
		{"blank lines, a bad line", lines[0] + "\n  \n{}\n" + strings.Join(lines[1:], ""), false, 0, []int{4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "in.jsonl")
			write(t, file, tc.body)
			st := memstore.New()
			defer st.Close()
			opens := 0
			c, err := importfile.Check(ctx, file, events.NewRegistry(), importfile.Store{None: tc.none, Open: func() (events.Store, error) {
				opens++
				return nopCloser{st}, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var bad []int
			for _, b := range c.Bad {
				bad = append(bad, b.Line)
			}
			if opens != tc.opens || !slices.Equal(bad, tc.bad) {
				t.Fatalf("Check opened the store %d time(s), refused lines %v; want %d and %v", opens, bad, tc.opens, tc.bad)
			}
			if len(tc.bad) > 0 && !strings.HasPrefix(c.Listed(0)[0], "and ") {
				t.Errorf("Listed(0) = %q", c.Listed(0))
			}
			if !tc.appends {
				return
			}
			res, err := c.Append(ctx, nil)
			if err != nil || res.Appended != c.Accepted || opens != 1 {
				t.Errorf("append: %+v (%v), %d open(s); want %d appended after one open", res, err, opens, c.Accepted)
			}
		})
	}
}
