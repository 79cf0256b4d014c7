package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
	"meshplane/events/pgstore"
	"meshplane/internal/meshtest"
	"meshplane/projections"
)

// rebuilt is every projection of store, folded from position 0.
func rebuilt(t *testing.T, store events.Store) []byte {
	t.Helper()
	set := projections.New()
	if err := projections.NewRunner(store, events.NewRegistry(), set.All()...).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := set.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMesh(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := mesh(t, args...)
	if code != exitOK {
		t.Fatalf("mesh %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// export -> import -> rebuild gives the projections of the source, on
// every kind of store; importing again appends nothing; and the target,
// exported, reads line for line as the source.
func TestExportImportAcrossStores(t *testing.T) {
	ctx := context.Background()
	src := upExample(t)
	file := filepath.Join(t.TempDir(), "events.jsonl")
	if out := mustMesh(t, "export", "--data", src, "-f", file); !strings.Contains(out, "exported") {
		t.Fatalf("export said %q", out)
	}
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustMesh(t, "export", "--data", src); got != string(exported) {
		t.Fatal("export to stdout differs from export to a file")
	}
	n := bytes.Count(exported, []byte("\n"))
	s, err := boltstore.Open(filepath.Join(src, "events.db"), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	want := rebuilt(t, s)
	s.Close()

	for _, tc := range []struct {
		name string
		// target imports file (by the CLI or directly) twice, returning
		// what each import printed, its store opened, and the flags that
		// name it to the CLI (nil: not reachable by the CLI).
		target func(t *testing.T) (outs [2]string, store events.Store, flags []string)
	}{
		{"bolt", func(t *testing.T) ([2]string, events.Store, []string) {
			dir := t.TempDir()
			outs := [2]string{mustMesh(t, "import", file, "--data", dir), mustMesh(t, "import", file, "--data", dir)}
			st, err := boltstore.Open(filepath.Join(dir, "events.db"), boltstore.ReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			return outs, st, []string{"--data", dir}
		}},
		{"postgres", func(t *testing.T) ([2]string, events.Store, []string) {
			// A --data that does not exist: the import needs none, and
			// makes none (before, it failed writing a secret key there).
			url, dir := meshtest.PgDatabase(t), filepath.Join(t.TempDir(), "none")
			outs := [2]string{mustMesh(t, "import", file, "--store", url, "--data", dir), mustMesh(t, "import", file, "--store", url, "--data", dir)}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an import into postgres made --data %s (%v)", dir, err)
			}
			st, err := pgstore.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			return outs, st, []string{"--store", url, "--data", dir}
		}},
		{"memory", func(t *testing.T) ([2]string, events.Store, []string) {
			st := memstore.New()
			var outs [2]string
			for i := range outs {
				res, err := importInto(ctx, st, file)
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = fmt.Sprintf("imported %d event(s) from %s: %d appended, %d already in the store\n", res.Read, file, res.Appended, res.Read-res.Appended)
			}
			return outs, st, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs, st, flags := tc.target(t)
			defer st.Close()
			for i, want := range []string{
				fmt.Sprintf("imported %d event(s) from %s: %d appended, 0 already in the store\n", n, file, n),
				fmt.Sprintf("imported %d event(s) from %s: 0 appended, %d already in the store\n", n, file, n),
			} {
				if outs[i] != want {
					t.Errorf("import %d said %q, want %q", i+1, outs[i], want)
				}
			}
			if head, err := st.Head(ctx); err != nil || head != uint64(n) {
				t.Errorf("head %d (%v) after two imports, want %d", head, err, n)
			}
			if got := rebuilt(t, st); !bytes.Equal(got, want) {
				t.Errorf("the projections rebuilt from the import differ from the source's")
			}
			if flags != nil {
				st.Close()
				if got := mustMesh(t, append([]string{"export"}, flags...)...); got != string(exported) {
					t.Errorf("the import, exported, differs from the source's export")
				}
			}
		})
	}
}

func TestExportSince(t *testing.T) {
	src := upExample(t)
	all := strings.Split(strings.TrimSpace(mustMesh(t, "export", "--data", src)), "\n")
	for _, since := range []int{0, 1, len(all) / 2, len(all) - 1, len(all), len(all) + 5} {
		t.Run(fmt.Sprint(since), func(t *testing.T) {
			out := mustMesh(t, "export", "--data", src, "--since", fmt.Sprint(since))
			var got []string
			if out != "" {
				got = strings.Split(strings.TrimSpace(out), "\n")
			}
			want := all[min(since, len(all)):]
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("--since %d: %d lines, want the last %d of %d", since, len(got), len(want), len(all))
			}
			if len(got) > 0 {
				ev, err := events.UnmarshalJSONLine([]byte(got[0]))
				if err != nil || ev.Position != uint64(since+1) {
					t.Errorf("first line at position %d (%v), want %d", ev.Position, err, since+1)
				}
			}
		})
	}
}

// importInto is mesh import of path into store, refusing a file with a
// bad line: both passes, what the file needs settled against store.
// (The import's own tests are commands/importfile's.)
func importInto(ctx context.Context, store events.Store, path string) (importfile.Result, error) {
	c, err := importfile.Check(ctx, path, events.NewRegistry(), importfile.Store{Open: func() (events.Store, error) { return unclosed{store}, nil }})
	if err != nil {
		return importfile.Result{}, err
	}
	defer c.Close()
	if len(c.Bad) > 0 {
		return importfile.Result{}, c.Bad[0]
	}
	return c.Append(ctx, nil)
}

// unclosed is a store its import does not close.
type unclosed struct{ events.Store }

func (unclosed) Close() error { return nil }

// A file with a line that is not an event is refused (exit 3), naming the
// line, before anything is written: no store is created.
func TestImportRefusesBadFiles(t *testing.T) {
	src := upExample(t)
	good := strings.SplitAfter(mustMesh(t, "export", "--data", src), "\n")
	first, second := good[0], good[1]
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not JSON", first + "{nope\n", "line 2: not an event to import"},
		{"no id", first + `{"stream":"node-a","type":"node.registered","at":"2026-09-29T22:46:00Z","data":{"node":"a"}}` + "\n", "line 2: not an event to import: no id"},
		{"no time", `{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"node-a","type":"node.registered","data":{"node":"a"}}` + "\n", "line 1: not an event to import: no time"},
		{"unknown field", `{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","strem":"node-a"}` + "\n", "unknown field"},
		{"no stream", `{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","type":"node.registered","at":"2026-09-29T22:46:00Z"}` + "\n", "line 1.stream: empty"},
		{"data not an object", `{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"s","type":"t","at":"2026-09-29T22:46:00Z","data":[1]}` + "\n", "not a JSON object"},
		{"an id twice", first + second + first, "line 3: not an event to import: id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "in.jsonl")
			if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "data")
			code, out, errOut := mesh(t, "import", file, "--data", data)
			if code != exitRejected || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want 3 with %q\n%s%s", code, tc.want, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(data, "events.db")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused import left a store behind (%v)", err)
			}
		})
	}
}

// chainRE is a line's chain value, as mesh export writes it (last).
var chainRE = regexp.MustCompile(`,"chain":"sha256:[0-9a-f]{64}"`)

// unchained is an export without its chain values, as a file edited by
// hand is imported.
func unchained(export string) string { return chainRE.ReplaceAllString(export, "") }

// firstLine is the first line of lines holding every one of want.
func firstLine(t *testing.T, lines []string, want ...string) string {
	t.Helper()
	for _, l := range lines {
		all := true
		for _, w := range want {
			all = all && strings.Contains(l, w)
		}
		if all {
			return l
		}
	}
	t.Fatalf("no line holds %q", want)
	return ""
}

// withID is line (an exported event) under a fresh id, so that it is not
// the event it was made from.
func withID(t *testing.T, line string) string {
	t.Helper()
	var ev events.Event
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(line, ev.ID.String(), events.NewID().String(), 1)
}

// TestImportRefusesBadLines: a good export with one bad line appended is
// refused whole (exit 3), naming the line and the reason, and the store it
// was imported into is unchanged: what the issue found appended is not.
func TestImportRefusesBadLines(t *testing.T) {
	src := upExample(t)
	export := mustMesh(t, "export", "--data", src)
	lines := strings.SplitAfter(strings.TrimSuffix(export, "\n"), "\n")
	n := len(lines) + 1 // the bad line's number
	apply := withID(t, strings.TrimSpace(firstLine(t, lines, `"type":"apply.reported"`, `"actor":"agent:novox"`)))
	defined := withID(t, strings.TrimSpace(firstLine(t, lines, `"type":"module.defined"`)))
	for _, tc := range []struct {
		name, line, want string
	}{
		{"schema 999", strings.Replace(defined, `"schema":1`, `"schema":999`, 1), "module.defined schema 999 is newer than this build's 1"},
		{"a payload of the wrong type", strings.Replace(apply, `"data":{"node":"novox"`, `"data":{"node":7`, 1), "apply.reported: json: cannot unmarshal number"},
		{"type twice", strings.Replace(apply, `"type":"apply.reported"`, `"type":"apply.reported","type":"module.defined"`, 1), "type: given twice"},
		{"an apply naming another node than its stream", strings.Replace(apply, `"stream":"node-novox"`, `"stream":"node-g14"`, 1),
			"apply.reported of node novox on stream node-g14: a node's events are on its own stream"},
		{"an apply for a node never registered", strings.NewReplacer(`"stream":"node-novox"`, `"stream":"node-ghost"`, `"node":"novox"`, `"node":"ghost"`,
			`"declaration":"novox/`, `"declaration":"ghost/`, `"actor":"agent:novox"`, `"actor":"agent:ghost"`).Replace(apply),
			"apply.reported on node-ghost: node ghost is not registered, in the store or earlier in the file"},
		{"negative counts", strings.Replace(apply, `"unchanged":`, `"unchanged":-1,"x":`, 1), "unchanged: -1 is below zero"},
		{"a module named Bad Name/../x", strings.NewReplacer(`"stream":"module-forge"`, `"stream":"module-Bad Name/../x"`, `"module":"forge"`, `"module":"Bad Name/../x"`).Replace(defined),
			`module name "Bad Name/../x": byte 0 is 'B'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "in.jsonl")
			// Edited by hand: without chain values (an edited export
			// with them is refused for them: commands/importchain.go).
			if err := os.WriteFile(file, []byte(unchained(export+tc.line+"\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			// Into a data directory with no store, and into one holding the
			// export already: both refused, neither changed.
			fresh, held := filepath.Join(dir, "fresh"), filepath.Join(dir, "held")
			good := filepath.Join(dir, "good.jsonl")
			if err := os.WriteFile(good, []byte(export), 0o600); err != nil {
				t.Fatal(err)
			}
			mustMesh(t, "import", good, "--data", held)
			for _, data := range []string{fresh, held} {
				code, out, errOut := mesh(t, "import", file, "--data", data)
				want := fmt.Sprintf("line %d: not an event to import: ", n)
				if code != exitRejected || !strings.Contains(errOut, want) || !strings.Contains(errOut, tc.want) ||
					!strings.Contains(errOut, "refused (invalid)") || !strings.Contains(errOut, "nothing was appended") {
					t.Fatalf("%s: exit %d, want 3 naming %q and %q\n%s%s", data, code, want, tc.want, out, errOut)
				}
			}
			if _, err := os.Stat(filepath.Join(fresh, "events.db")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused import left a store behind (%v)", err)
			}
			if got := mustMesh(t, "export", "--data", held); got != export {
				t.Errorf("a refused import changed the store")
			}
		})
	}
}

// TestImportSkipInvalid: --skip-invalid appends every good line, lists the
// bad ones on stderr with their number and reason, and says how many it
// skipped; a bad line that names a node the store holds is no longer bad.
func TestImportSkipInvalid(t *testing.T) {
	src := upExample(t)
	export := mustMesh(t, "export", "--data", src)
	lines := strings.SplitAfter(export, "\n")
	lines = lines[:len(lines)-1] // after the last newline
	apply := strings.TrimSpace(firstLine(t, lines, `"type":"apply.reported"`, `"actor":"agent:novox"`))
	schema := strings.Replace(withID(t, apply), `"schema":1`, `"schema":999`, 1)
	ghost := strings.NewReplacer(`"stream":"node-novox"`, `"stream":"node-ghost"`, `"node":"novox"`, `"node":"ghost"`,
		`"declaration":"novox/`, `"declaration":"ghost/`, `"actor":"agent:novox"`, `"actor":"agent:ghost"`).Replace(withID(t, apply))
	// The export with a bad line after its second and a ghost's apply at
	// the end: lines 3 and len+2.
	body := unchained(lines[0] + lines[1] + schema + "\n" + strings.Join(lines[2:], "") + ghost + "\n")
	dir := t.TempDir()
	file := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out, errOut := mesh(t, "import", file, "--data", data, "--skip-invalid")
	wantOut := fmt.Sprintf("imported %d event(s) from %s: %d appended, 0 already in the store; 2 invalid line(s) skipped\n", len(lines), file, len(lines))
	if code != exitOK || out != wantOut {
		t.Fatalf("exit %d, stdout %q; want 0 and %q\n%s", code, out, wantOut, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf("mesh import: %s: line 3: not an event to import: events: apply.reported schema 999 is newer than this build's 1: invalid input (skipped)\n", file),
		fmt.Sprintf("mesh import: %s: line %d: not an event to import: apply.reported on node-ghost: node ghost is not registered, in the store or earlier in the file (skipped)\n", file, len(lines)+2),
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q\nwant it to hold %q", errOut, want)
		}
	}
	if got := mustMesh(t, "export", "--data", data); got != export {
		t.Errorf("the good lines, exported, differ from the source's export")
	}

	// The ghost registered in the store: its apply, alone in a file, is
	// refused for what the store does not hold now, a compose of ghost/1
	// (not for the node); and without --skip-invalid the file with the
	// bad schema still is refused whole.
	if _, err := os.Stat(filepath.Join(data, "events.db")); err != nil {
		t.Fatal(err)
	}
	mustMesh(t, "node", "register", "ghost", "--data", data)
	only := filepath.Join(dir, "ghost.jsonl")
	if err := os.WriteFile(only, []byte(ghost+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := mesh(t, "import", only, "--data", data); code != exitRejected ||
		!strings.Contains(errOut, `line 1: not an event to import: apply.reported on node-ghost: declaration "ghost/1" was never composed for node ghost, in the store or earlier in the file`) {
		t.Errorf("the ghost's apply, once ghost is registered: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := mesh(t, "import", file, "--data", data); code != exitRejected || !strings.Contains(errOut, "line 3: not an event to import") {
		t.Errorf("without --skip-invalid: exit %d\n%s", code, errOut)
	}
}
