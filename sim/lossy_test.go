package sim

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"meshplane/commands"
	"meshplane/events/memstore"
)

// TestLossyCacheComposesAsLossyReader: under SetLossy, a pass's composes
// through the shared lossy cache (lossyReaderFor) are those of seed 000's
// reader (lossyReader, uncached) over the pass's cache, declaration for
// declaration, failure for failure: with one lossy node, with several,
// with a lossy node whose store reads fail, and with a read failure
// elsewhere.
func TestLossyCacheComposesAsLossyReader(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		lossy []string
		fail  string // a node whose stream reads fail, or ""
	}{
		{name: "one lossy node", lossy: []string{NodeName(3)}},
		{name: "three lossy nodes, one big", lossy: []string{NodeName(0), NodeName(4), NodeName(9)}},
		{name: "a lossy node whose reads fail", lossy: []string{NodeName(2)}, fail: NodeName(2)},
		{name: "a read failure elsewhere", lossy: []string{NodeName(2)}, fail: NodeName(5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			defer store.Close()
			r, err := NewRun(ctx, store, Config{Nodes: 12, Modules: 6, Passes: 4, Seed: 5, Big: 1, Faults: DefaultFaults(4)})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Passes(ctx); err != nil {
				t.Fatal(err)
			}
			m := r.Mesh
			if tc.fail != "" {
				m.Store.FailReads(tc.fail, false)
			}
			m.SetLossy(tc.lossy...)
			pass := commands.NewMeshCache(m.Handler)
			pass.Prepare(ctx)
			lossySeen := 0
			for _, node := range r.Nodes() {
				want, wantErr := commands.Compose(ctx, &lossyReader{r: pass.For(node), target: node, lossy: m.lossy}, node, "c")
				got, gotErr := commands.Compose(ctx, m.composeReader(node, pass.For(node)), node, "c")
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: error %v, want %v", node, gotErr, wantErr)
				}
				if !reflect.DeepEqual(got.Declaration, want.Declaration) || !reflect.DeepEqual(got.Skipped, want.Skipped) {
					t.Fatalf("%s: composed %s (%d routes), want %s (%d routes)", node, got.Declaration.Digest, len(got.Declaration.Roster), want.Declaration.Digest, len(want.Declaration.Roster))
				}
				if m.lossy[node] {
					lossySeen++
				}
			}
			if m.lossyPass == nil || m.lossyPass.pass != pass {
				t.Errorf("the composes of the nodes not lossy did not share a lossy cache of the pass")
			}
			if lossySeen != len(tc.lossy) {
				t.Errorf("%d lossy nodes composed, want %d", lossySeen, len(tc.lossy))
			}
			m.SetLossy()
			if m.lossyPass != nil {
				t.Errorf("SetLossy() kept the lossy cache")
			}
		})
	}
}
