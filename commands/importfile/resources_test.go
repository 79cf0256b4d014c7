package importfile_test

import (
	"context"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// rosterMoved is a store whose history has composed declarations stored
// by reference to their resources: a module moved changes every node's
// roster, not its resources.
func rosterMoved(t *testing.T) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	src := memstore.New()
	t.Cleanup(func() { src.Close() })
	faults, err := sim.ParseFaults("move:count=1,passes=3")
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.NewRun(ctx, src, sim.Config{Nodes: 6, Modules: 8, Passes: 4, Seed: 2, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Passes(ctx); err != nil {
		t.Fatal(err)
	}
	return src
}

// TestComposedByReferenceRoundTrips: an export gives every declaration
// stored by reference its resources in full beside resources_since; the
// export imports into an empty store as the store it came from, byte for
// byte (each reference checked against the line it names, and stored by
// reference again), folds to the projections of that store and of the
// public form appended as it is (resources in full), and exports again
// as the export imported; an export --since imports onto the store
// holding what comes before it as that store, each reference checked
// there. A public line whose resources are not those its reference names
// is refused.
func TestComposedByReferenceRoundTrips(t *testing.T) {
	ctx := context.Background()
	src := rosterMoved(t)
	full, compact := exportOf(t, src, 0, false), exportOf(t, src, 0, true)
	byRef := 0
	for _, line := range strings.Split(strings.TrimSpace(compact), "\n") {
		if strings.Contains(line, `"resources_since"`) {
			byRef++
			if strings.Contains(line, `"resources":`) {
				t.Fatalf("a stored line by reference carries its resources: %s", line)
			}
		}
	}
	publicRefs := 0
	for _, line := range strings.Split(strings.TrimSpace(full), "\n") {
		if strings.Contains(line, `"resources_since"`) {
			publicRefs++
			if !strings.Contains(line, `"resources":[{`) {
				t.Fatalf("a public line by reference without its resources: %s", line)
			}
		}
	}
	if byRef == 0 || publicRefs != byRef {
		t.Fatalf("%d stored lines by reference, %d public: the test proves nothing", byRef, publicRefs)
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

	// The projections are those of the full form: the public events
	// appended as they are, every resource list in full.
	plain := memstore.New()
	defer plain.Close()
	for _, line := range strings.Split(strings.TrimSpace(full), "\n") {
		ev, err := events.UnmarshalJSONLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		ev.Version, ev.Position = 0, 0
		if _, err := plain.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := projected(t, plain); got != want {
		t.Errorf("the stored form folds to other projections than the full form")
	}

	// An export --since in the public form onto the store holding what
	// comes before: each reference to a declaration before it is checked
	// in that store, and stored by reference.
	lines := strings.SplitAfter(compact, "\n")
	cut := 0
	for i, line := range lines {
		if strings.Contains(line, `"resources_since"`) {
			cut = i // the first declaration by reference: before it, the one it names
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
	tamperedTail := strings.Replace(tail, `"resources":[{"name":"`, `"resources":[{"name":"x`, 1)
	onto := memstore.New()
	defer onto.Close()
	importInto(t, onto, strings.Join(lines[:cut], ""))
	if bad := importInto(t, onto, tamperedTail); len(bad) != 1 || !strings.Contains(bad[0], "in the store") {
		t.Errorf("import --since of a public line with other resources than the store's: %v", bad)
	}

	// A public line whose resources are not those resources_since names.
	var tampered []string
	done := false
	for _, line := range strings.Split(strings.TrimSpace(full), "\n") {
		if !done && strings.Contains(line, `"resources_since"`) {
			line = strings.Replace(line, `"resources":[{"name":"`, `"resources":[{"name":"x`, 1)
			done = true
		}
		tampered = append(tampered, line)
	}
	other := memstore.New()
	defer other.Close()
	// The line is refused; so is every later line that names its
	// declaration, which the import then never composed.
	bad := importInto(t, other, strings.Join(tampered, "\n")+"\n")
	if len(bad) == 0 || !strings.Contains(bad[0], "are not those of the declaration") {
		t.Errorf("import of a public line with other resources: %v", bad)
	}
	for _, b := range bad[min(1, len(bad)):] {
		if !strings.Contains(b, "was never composed") {
			t.Errorf("import of a public line with other resources: a later line refused for another reason: %s", b)
		}
	}
}
