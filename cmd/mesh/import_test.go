package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
	"meshplane/events/pgstore"
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
			url, dir := pgDatabase(t), t.TempDir()
			outs := [2]string{mustMesh(t, "import", file, "--store", url, "--data", dir), mustMesh(t, "import", file, "--store", url, "--data", dir)}
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
				res, err := importFile(ctx, st, file, nil)
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = fmt.Sprintf("imported %d event(s) from %s: %d appended, %d already in the store\n", res.read, file, res.appended, res.read-res.appended)
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

// An import that stopped midway is finished by importing the whole file:
// the batches the store holds in part are appended one event at a time.
func TestImportResumes(t *testing.T) {
	ctx := context.Background()
	src := upExample(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	mustMesh(t, "export", "--data", src, "-f", full)
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1] // after the last newline
	half := filepath.Join(dir, "half.jsonl")
	// Every other line of the first half: batches of one stream are cut.
	var part []string
	for i := 0; i < len(lines)/2; i += 2 {
		part = append(part, lines[i])
	}
	if err := os.WriteFile(half, []byte(strings.Join(part, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	defer st.Close()
	first, err := importFile(ctx, st, half, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := importFile(ctx, st, full, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.appended != len(part) || second.appended != len(lines)-len(part) || second.read != len(lines) {
		t.Errorf("appended %d then %d of %d; want %d then %d", first.appended, second.appended, second.read, len(part), len(lines)-len(part))
	}
}

// A file with a line that is not an event is refused, naming the line,
// before anything is written: no store is created.
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
			if code != exitFailed || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want 1 with %q\n%s%s", code, tc.want, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(data, "events.db")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused import left a store behind (%v)", err)
			}
		})
	}
}
