package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/sim"
)

// TestRosterChangeCostsWhatChanged is issue 32 item 3 at a small scale: a
// module moved to another node changes every node's roster, and a node
// whose resources did not change records its declaration by reference to
// the one that carried them (resources_since), smaller than the same
// event with its resources in full; so the pass costs a node less than
// its composed declaration alone did with them, all events of the pass
// counted (before: the full declaration, its push and its apply report).
func TestRosterChangeCostsWhatChanged(t *testing.T) {
	const nodes = 40
	r, _ := runSim(t, sim.Config{Nodes: nodes, Modules: 48, Passes: 3, Seed: 1, Faults: mustFaults(t, "move:count=1,passes=3")})
	ctx := context.Background()
	evs, err := r.Mesh.Store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	reg := r.Mesh.Registry
	book := events.NewResourceBook(reg, nil)
	var passBytes, fullBytes, refBytes, composed, byRef int
	for _, ev := range evs {
		pass := r.PassOf(ev.Position)
		if ev.Type != events.TypeDeclarationComposed {
			if pass == 3 {
				passBytes += sim.RecordBytes(ev)
			}
			continue
		}
		c, err := events.DecodeAs[events.DeclarationComposed](reg, ev)
		if err != nil {
			t.Fatal(err)
		}
		resolved, err := book.Resolve(ctx, ev, c)
		if err != nil || resolved.ResourcesUnknown != "" {
			t.Fatalf("position %d: %v %s", ev.Position, err, resolved.ResourcesUnknown)
		}
		if pass != 3 {
			continue
		}
		// The same declaration with its resources in full, as it was
		// stored before.
		full := resolved
		full.ResourcesSince = ""
		fev := ev
		if fev.Data, err = json.Marshal(full); err != nil {
			t.Fatal(err)
		}
		size, fsize := sim.RecordBytes(ev), sim.RecordBytes(fev)
		passBytes += size
		fullBytes += fsize
		composed++
		if c.ByReference() {
			byRef++
			refBytes += size
			if size >= fsize {
				t.Errorf("%s by reference is %d bytes, %d in full", ev.Stream, size, fsize)
			}
			if strings.Contains(string(ev.Data), `"resources":`) {
				t.Errorf("%s by reference stores its resources: %s", ev.Stream, ev.Data)
			}
		}
	}
	t.Logf("pass 3: %d B a node, all events counted; %d composed, %d by reference (%d B each); %d B a composed declaration in full",
		passBytes/nodes, composed, byRef, refBytes/max(byRef, 1), fullBytes/max(composed, 1))
	// The move changes the resources of two nodes: every other one is
	// recorded by reference.
	if composed < nodes || byRef < composed-2 {
		t.Fatalf("pass 3 composed %d declarations, %d by reference; want %d, all but 2", composed, byRef, nodes)
	}
	if got, bound := passBytes/nodes, fullBytes/composed; got >= bound {
		t.Errorf("pass 3 appended %d B a node, all events counted; a composed declaration in full alone is %d B", got, bound)
	}
	if st := r.Stats()[3]; st.Bytes != passBytes {
		t.Errorf("the simulator counted %d B in pass 3, the test %d", st.Bytes, passBytes)
	}
}
