package sim

import (
	"context"
	"fmt"

	"meshplane/commands"
	"meshplane/events"
)

// Workload describes a generated mesh: how many nodes and modules, and the
// faults injected while passes run. Everything it does goes through the
// mesh's commands, compose, agents and store, so the events it leaves are
// the ones a real mesh would.
type Workload struct {
	Nodes          int // nodes, "node-000" ...
	Modules        int // modules, each with Containers containers, one mounted path and one routed name
	Containers     int
	ModulesPerNode int // modules assigned to each node
	ChurnEvery     int // every ChurnEvery-th node has its containers removed behind the mesh's back (0: none)
	FlakyEvery     int // every FlakyEvery-th node's stream fails reads on every other pass (0: none)
	ReassignEvery  int // every ReassignEvery-th round, one module moves to another node (0: never)
	BusCutEvery    int // every BusCutEvery-th round, one node's bus is cut for the round, then restored (0: never)
	AdoptedEvery   int // every AdoptedEvery-th node is adopted, with its first module's data found on disk (0: none)
}

// DefaultWorkload is a small mesh with every kind of fault.
var DefaultWorkload = Workload{
	Nodes: 12, Modules: 16, Containers: 3, ModulesPerNode: 3,
	ChurnEvery: 5, FlakyEvery: 10, ReassignEvery: 7, BusCutEvery: 4, AdoptedEvery: 6,
}

// Setup defines the workload's modules and nodes and assigns them.
func (m *Mesh) Setup(ctx context.Context, w Workload) error {
	for i := 0; i < w.Modules; i++ {
		name := fmt.Sprintf("mod-%03d", i)
		spec := events.ModuleSpec{Routes: []string{name + ".mesh.example"}}
		for c := 0; c < w.Containers; c++ {
			cs := events.ContainerSpec{
				Name:  fmt.Sprintf("%s-c%d", name, c),
				Image: fmt.Sprintf("registry.example/%s/c%d:1", name, c),
				Env:   map[string]string{"MODULE": name},
				Ports: []events.PortRead{{Port: "store", Env: "STORE_PORT"}},
			}
			if c == 0 {
				cs.Mounts = []events.Mount{{Source: "/var/lib/" + name}}
			}
			spec.Containers = append(spec.Containers, cs)
		}
		if err := m.Do(ctx, commands.DefineModule{Module: name, Spec: spec}); err != nil {
			return err
		}
	}
	for i := 0; i < w.Nodes; i++ {
		node := NodeName(i)
		n, err := m.AddNode(ctx, node)
		if err != nil {
			return err
		}
		for _, c := range []commands.Command{
			commands.SetNodeSetting{Node: node, Key: events.SettingPrivateAddress, Value: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)},
			commands.SetNodeSetting{Node: node, Key: events.SettingPortPrefix + "store", Value: "6852"},
		} {
			if err := m.Do(ctx, c); err != nil {
				return err
			}
		}
		adopted := w.AdoptedEvery > 0 && i%w.AdoptedEvery == 0
		if adopted {
			if err := m.Do(ctx, commands.AdoptNode{Node: node}); err != nil {
				return err
			}
		}
		for j := 0; j < w.ModulesPerNode; j++ {
			mod := fmt.Sprintf("mod-%03d", (i*w.ModulesPerNode+j)%w.Modules)
			if err := m.Do(ctx, commands.AssignModule{Module: mod, Node: node}); err != nil {
				return err
			}
			if adopted && j == 0 {
				if err := n.Runtime.MakeDirectory("/var/lib/"+mod, 0o700); err != nil {
					return err
				}
			}
		}
		if w.ChurnEvery > 0 && i%w.ChurnEvery == w.ChurnEvery-1 {
			if err := m.RemoveContainersAfterApply(node); err != nil {
				return err
			}
		}
	}
	return nil
}

// NodeName is the name of the i-th generated node.
func NodeName(i int) string { return fmt.Sprintf("node-%03d", i) }

// Round runs one pass on every node of the workload, after the operator
// actions and faults the round calls for. round counts from 0.
func (m *Mesh) Round(ctx context.Context, w Workload, round int) error {
	if w.ReassignEvery > 0 && round > 0 && round%w.ReassignEvery == 0 {
		if err := m.moveModule(ctx, w, round); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	cut := ""
	if w.BusCutEvery > 0 && round%w.BusCutEvery == 1 {
		cut = NodeName(round % w.Nodes)
		if err := m.CutBus(cut); err != nil {
			return err
		}
	}
	if w.FlakyEvery > 0 && round%w.FlakyEvery == 2 {
		// The store cannot read one node's stream this round, as a store in
		// crash recovery refuses connections: every compose that reads it fails.
		m.Store.FailReads(NodeName((round/w.FlakyEvery)%w.Nodes), false)
		defer m.Store.Recover()
	}
	for i := 0; i < w.Nodes; i++ {
		if _, _, err := m.Pass(ctx, NodeName(i)); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	if cut != "" {
		if err := m.RestoreBus(ctx, cut); err != nil {
			return err
		}
	}
	return nil
}

// moveModule moves one module, chosen by round, from a node that has it to
// the next node that does not: an operator's release and assign, and a
// roster change on every node.
func (m *Mesh) moveModule(ctx context.Context, w Workload, round int) error {
	mod := fmt.Sprintf("mod-%03d", (round/w.ReassignEvery)%w.Modules)
	var from = -1
	for i := 0; i < w.Nodes; i++ {
		n, err := m.Handler.Node(ctx, NodeName(i))
		if err != nil {
			return err
		}
		if n.Assigned[mod] {
			from = i
			break
		}
	}
	if from < 0 {
		return nil // on no node: nothing to move
	}
	for k := 1; k < w.Nodes; k++ {
		to := (from + k) % w.Nodes
		n, err := m.Handler.Node(ctx, NodeName(to))
		if err != nil {
			return err
		}
		if n.Assigned[mod] {
			continue
		}
		if err := m.Do(ctx, commands.ReleaseModule{Module: mod, Node: NodeName(from)}); err != nil {
			return err
		}
		return m.Do(ctx, commands.AssignModule{Module: mod, Node: NodeName(to)})
	}
	return nil
}

// Generate sets the workload up and runs rounds until the store holds at
// least n events.
func (m *Mesh) Generate(ctx context.Context, w Workload, n uint64) error {
	if err := m.Setup(ctx, w); err != nil {
		return err
	}
	for round := 0; ; round++ {
		head, err := m.Store.Head(ctx)
		if err != nil {
			return err
		}
		if head >= n {
			return nil
		}
		if err := m.Round(ctx, w, round); err != nil {
			return err
		}
	}
}
