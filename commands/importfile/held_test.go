package importfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/events/export"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// exportOf is the export of src after since: the public form, or the
// stored one (compact).
func exportOf(t *testing.T, src events.Store, since uint64, compact bool) string {
	t.Helper()
	write := export.Write
	if compact {
		write = export.WriteCompact
	}
	var b bytes.Buffer
	if _, err := write(context.Background(), src, since, &b, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// importInto imports body into store (which keeps its ReadByID) and
// returns the lines refused.
func importInto(t *testing.T, store *memstore.Store, body string) []string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	write(t, path, body)
	c, err := importfile.Check(ctx, path, events.NewRegistry(), importfile.Store{Open: func() (events.Store, error) { return keepOpen{store}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Bad) > 0 {
		return c.Listed(10)
	}
	if _, err := c.Append(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return nil
}

// keepOpen is a store its import does not close, and that reads by id.
type keepOpen struct{ *memstore.Store }

func (keepOpen) Close() error { return nil }

// sameStore fails unless got holds what want holds: every event, at the
// same position, with the same bytes.
func sameStore(t *testing.T, name string, want, got events.Store) {
	t.Helper()
	ctx := context.Background()
	w, err := want.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := got.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != len(w) {
		t.Fatalf("%s: %d events, want %d", name, len(g), len(w))
	}
	for i := range w {
		if !g[i].SameContent(w[i]) || g[i].Position != w[i].Position || !bytes.Equal(g[i].Data, w[i].Data) {
			t.Fatalf("%s: position %d is\n%s\nwant\n%s", name, w[i].Position, g[i].Data, w[i].Data)
		}
	}
}

func projected(t *testing.T, store events.Store) string {
	t.Helper()
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
	if err := r.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, n := r.Failures(); n > 0 {
		t.Fatalf("%d failure(s) folding", n)
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExportFullAndCompactRoundTrip: an export in the public form (every
// quiet report's holds in full beside its held_since) and one in the
// stored form (--compact) each import into an empty store as the very
// store they came from, byte for byte, and so fold to the same
// projections; an export --since, whose reports name held lists before
// it, imports onto the store holding what comes before, checked there.
func TestExportFullAndCompactRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := memstore.New()
	defer src.Close()
	if err := sim.New(src).Generate(ctx, sim.DefaultWorkload, 300); err != nil {
		t.Fatal(err)
	}
	full, compact := exportOf(t, src, 0, false), exportOf(t, src, 0, true)
	since := 0
	for _, line := range strings.Split(strings.TrimSpace(full), "\n") {
		if !strings.Contains(line, `"held_since"`) {
			continue
		}
		since++
		if !strings.Contains(line, `"held":[{`) {
			t.Fatalf("a public line with held_since and no holds: %s", line)
		}
	}
	if since == 0 || strings.Count(compact, `"held_since"`) != since || strings.Count(compact, `"held":[{`) >= strings.Count(full, `"held":[{`) {
		t.Fatalf("the history has %d quiet reports naming a held list: the test proves nothing", since)
	}
	want := projected(t, src)
	for name, body := range map[string]string{"full": full, "compact": compact} {
		dst := memstore.New()
		defer dst.Close()
		if bad := importInto(t, dst, body); bad != nil {
			t.Fatalf("import of the %s export: %v", name, bad)
		}
		sameStore(t, name, src, dst)
		if got := projected(t, dst); got != want {
			t.Errorf("import of the %s export folds to other projections", name)
		}
		if again := exportOf(t, dst, 0, name == "compact"); again != body {
			t.Errorf("the %s export of the import is not the export imported", name)
		}
	}

	// An export --since in the public form onto the store holding what
	// comes before: the held lists before it are checked in that store.
	lines := strings.SplitAfter(compact, "\n")
	cut := 0
	for i, line := range lines {
		if strings.Contains(line, `"held_since"`) {
			cut = i // the first quiet report naming a list: before it, its list
			break
		}
	}
	head := memstore.New()
	defer head.Close()
	if bad := importInto(t, head, strings.Join(lines[:cut], "")); bad != nil {
		t.Fatal(bad)
	}
	tail := exportOf(t, src, uint64(cut), false)
	if bad := importInto(t, head, tail); bad != nil {
		t.Fatalf("import of the public export --since %d: %v", cut, bad)
	}
	sameStore(t, "since", src, head)

	// A public line whose holds are not those held_since names is refused.
	tampered := strings.Replace(tail, `"held":[{"name":"`, `"held":[{"name":"x`, 1)
	other := memstore.New()
	defer other.Close()
	importInto(t, other, strings.Join(lines[:cut], ""))
	if bad := importInto(t, other, tampered); len(bad) != 1 || !strings.Contains(bad[0], "is not the held list of apply") {
		t.Errorf("import of a public line with other holds: %v", bad)
	}
}
