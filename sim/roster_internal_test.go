package sim

import (
	"bytes"
	"context"
	"testing"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

// TestRosterTravelsOnce: on the simulated bus, a roster change puts the
// roster once and every node's declaration without it; every node holds
// the one shared roster value (no copy of its routes or hosts text), and
// every hosts file names the new name after that one pass.
func TestRosterTravelsOnce(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	r, err := NewRun(ctx, store, Config{Nodes: 12, Modules: 8, Passes: 2, Seed: 3, ModulesPerNode: 2, Containers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Pass(ctx, 1); err != nil {
		t.Fatal(err)
	}
	const added = "added.mesh.example"
	for _, c := range []commands.Command{
		commands.DefineModule{Module: "added", Spec: events.ModuleSpec{Routes: []string{added},
			Containers: []events.ContainerSpec{{Name: "added-app", Image: "registry.example/added:1"}}}},
		commands.AssignModule{Module: "added", Node: NodeName(0)},
	} {
		if err := r.Mesh.Do(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	r.Mesh.CountBus()
	if err := r.Pass(ctx, 2); err != nil {
		t.Fatal(err)
	}
	nodes := r.Nodes()
	if got := r.Mesh.BusCounted().Puts; got != int64(len(nodes))+1 {
		t.Errorf("%d puts on the bus for a roster change of %d nodes, want one a node and one roster", got, len(nodes))
	}
	shared := r.Mesh.roster
	if shared == nil || !bytes.Contains([]byte(shared.Hosts()), []byte(added)) {
		t.Fatal("the bus's roster value does not name the new name")
	}
	for _, name := range nodes {
		n, err := r.Mesh.Node(name)
		if err != nil {
			t.Fatal(err)
		}
		n.mu.Lock()
		latest, held := n.latest, n.roster
		n.mu.Unlock()
		if !latest.NamesRoster() || latest.Hosts != "" {
			t.Fatalf("%s's declaration travelled with its roster", name)
		}
		if held != shared {
			t.Fatalf("%s holds a roster of its own, not the bus's shared value", name)
		}
		if hosts, _, ok := n.Runtime.File(declaration.HostsPath); !ok || string(hosts) != shared.Hosts() {
			t.Fatalf("%s's hosts file is not the roster's", name)
		}
	}
}
