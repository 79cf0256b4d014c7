package sim_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// appendCounter counts what is appended to the store beneath it: events
// and their encoded data (the payloads' bytes).
type appendCounter struct {
	events.Store
	events, bytes atomic.Int64
}

func (c *appendCounter) Append(ctx context.Context, stream string, expected events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	out, err := c.Store.Append(ctx, stream, expected, evs...)
	if err == nil {
		for _, ev := range evs {
			c.events.Add(1)
			c.bytes.Add(int64(len(ev.Data)))
		}
	}
	return out, err
}

// BenchmarkRosterChange is issue 23 item 1's target, simulated:
// MESH_ROSTER_NODES nodes (default 10,000) and MESH_ROSTER_NAMES routed
// names (default 2,000: as many modules routing one name each, three a
// node, so 15 nodes serve each at 10,000), settled by one pass; then one
// routed name is added (a module defined and assigned to one node) and one
// pass (the controller's push, every node's apply) runs. It reports, per
// node, the bytes put on the simulated bus during that pass (every value
// put, as JSON: declarations and any shared roster value: Mesh.CountBus)
// and the bytes appended to the store (each event's encoded data), and how
// many nodes' hosts files name the new name after that one pass (the
// target: every node).
//
//	go test -run='^$' -bench=RosterChange -benchtime=1x -timeout=60m ./sim/
func BenchmarkRosterChange(b *testing.B) {
	nodes, names := envInt(b, "MESH_ROSTER_NODES", 10000), envInt(b, "MESH_ROSTER_NAMES", 2000)
	ctx := context.Background()
	const added = "added.mesh.example"
	for b.Loop() {
		store := &appendCounter{Store: memstore.New()}
		r, err := sim.NewRun(ctx, store, sim.Config{Nodes: nodes, Modules: names, Passes: 2, Seed: 1, ModulesPerNode: 3, Containers: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Pass(ctx, 1); err != nil {
			b.Fatal(err)
		}
		for _, c := range []commands.Command{
			commands.DefineModule{Module: "added", Spec: events.ModuleSpec{Routes: []string{added},
				Containers: []events.ContainerSpec{{Name: "added-app", Image: "registry.example/added:1"}}}},
			commands.AssignModule{Module: "added", Node: sim.NodeName(0)},
		} {
			if err := r.Mesh.Do(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
		r.Mesh.CountBus()
		evs0, bytes0 := store.events.Load(), store.bytes.Load()
		start := time.Now()
		if err := r.Pass(ctx, 2); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		bus := r.Mesh.BusCounted()
		updated := 0
		for _, name := range r.Nodes() {
			n, err := r.Mesh.Node(name)
			if err != nil {
				b.Fatal(err)
			}
			if hosts, _, ok := n.Runtime.File(declaration.HostsPath); ok && bytes.Contains(hosts, []byte(added)) {
				updated++
			}
		}
		per := float64(len(r.Nodes()))
		b.ReportMetric(float64(bus.Bytes)/per, "bus-bytes/node")
		b.ReportMetric(float64(bus.Puts), "bus-puts")
		b.ReportMetric(float64(store.bytes.Load()-bytes0)/per, "store-bytes/node")
		b.ReportMetric(float64(store.events.Load()-evs0), "store-events")
		b.ReportMetric(float64(updated)/per, "hosts-updated-share")
		b.ReportMetric(took.Seconds(), "pass-s")
		if updated != len(r.Nodes()) {
			b.Errorf("%d of %d nodes' hosts files name %s after one pass", updated, len(r.Nodes()), added)
		}
		store.Close()
	}
}
