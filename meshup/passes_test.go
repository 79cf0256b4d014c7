package meshup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events/storeurl"
	"meshplane/projections"
)

// exampleSetUp reads examples/mesh.yaml and examples/modules.
func exampleSetUp(t *testing.T) (File, []commands.DefineModule) {
	t.Helper()
	mf, err := ReadFile("../examples/mesh.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../examples/modules/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var defs []commands.DefineModule
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		name, spec, err := commands.ReadModuleFile(f, r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, commands.DefineModule{Module: name, Spec: spec})
	}
	return mf, defs
}

// TestPasses: the in-process run sets the example up on a new bolt store,
// runs its passes (one line per node and pass), and every node ends in
// sync; run again over the same data, its set-up finds everything done.
func TestPasses(t *testing.T) {
	mf, defs := exampleSetUp(t)
	data := t.TempDir()
	clock := func() time.Time { return time.Now().UTC() }
	for _, run := range []string{"first", "again"} {
		var out bytes.Buffer
		sts, err := Passes(context.Background(), PassesConfig{Data: data, File: mf, Modules: defs, Passes: 2, Clock: clock, Out: &out})
		if err != nil {
			t.Fatalf("%s: %v\n%s", run, err, out.String())
		}
		if len(sts) != len(mf.Nodes) {
			t.Fatalf("%s: %d statuses, want one per node (%d)", run, len(sts), len(mf.Nodes))
		}
		for i, st := range sts {
			if st.Node != mf.Nodes[i].Name || st.Sync != projections.SyncInSync {
				t.Errorf("%s: status %d: %s %s, want %s in sync", run, i, st.Node, st.Sync, mf.Nodes[i].Name)
			}
			if n := strings.Count(out.String(), "  "+st.Node+" "); n < 2 {
				t.Errorf("%s: %d pass lines for %s, want 2:\n%s", run, n, st.Node, out.String())
			}
		}
		if done := strings.Contains(out.String(), "found their work already done"); done != (run == "again") {
			t.Errorf("%s: says its set-up was done already: %v\n%s", run, done, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(data, DataIDFile)); err != nil {
		t.Errorf("the data directory's id: %v", err)
	}
}

// TestPassesRefusedWritesNothing: a set-up its Check refuses is Refused's
// error, and leaves neither a store nor an id behind.
func TestPassesRefusedWritesNothing(t *testing.T) {
	mf, defs := exampleSetUp(t)
	data := filepath.Join(t.TempDir(), "data")
	refused := &commands.Rejection{Code: "invalid", Msg: "no"}
	var checked int
	_, err := Passes(context.Background(), PassesConfig{
		Data: data, File: mf, Modules: defs, Passes: 1, Out: &bytes.Buffer{},
		Check: func(_ context.Context, cs []commands.Command) error { checked = len(cs); return refused },
	})
	var rej *commands.Rejection
	if !errors.As(err, &rej) || !strings.Contains(rej.Msg, "nothing was written") {
		t.Fatalf("%v, want the refusal saying nothing was written", err)
	}
	if checked == 0 {
		t.Errorf("Check saw no command")
	}
	if _, err := os.Stat(storeurl.Path(data)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused set-up left a store (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(data, DataIDFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused set-up left an id (%v)", err)
	}
}
