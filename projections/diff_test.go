package projections

import (
	"reflect"
	"testing"
	"time"

	"meshplane/events"
)

// diffOf folds g's events to from, reads that end, folds on to the last
// event, and diffs: what mesh diff --from FROM computes over a store.
func diffOf(t *testing.T, g *gen, from uint64, before map[string]events.ModuleSpec) MeshDiff {
	t.Helper()
	s := New()
	fold(t, g.reg, g.evs[:from], s.Small()...)
	a := StateOf(s, from, atOf(g, from))
	fold(t, g.reg, g.evs[from:], s.Small()...)
	to := uint64(len(g.evs))
	b := StateOf(s, to, atOf(g, to))
	var evs []Decoded
	for _, ev := range g.evs[from:] {
		p, err := g.reg.Decode(ev)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, Decoded{ev, p})
	}
	return DiffMesh(a, b, evs, before)
}

func atOf(g *gen, pos uint64) time.Time {
	if pos == 0 {
		return time.Time{}
	}
	return g.evs[pos-1].At
}

func nodeDiff(t *testing.T, d MeshDiff, node string) NodeDiff {
	t.Helper()
	for _, n := range d.Nodes {
		if n.Node == node {
			return n
		}
	}
	t.Fatalf("no diff of node %s in %+v", node, d.Nodes)
	return NodeDiff{}
}

func TestDiffMesh(t *testing.T) {
	web := events.ModuleSpec{Routes: []string{"forge.internal"}, Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1"}}}
	web2 := events.ModuleSpec{Routes: []string{"forge.internal"}, Containers: []events.ContainerSpec{{Name: "web", Image: "forge:2", Env: map[string]string{"A": "1"}}}}
	held := events.Held{Name: "m-0", Module: "m", Reason: "found data"}
	for _, tc := range []struct {
		name  string
		build func(g *gen) (from uint64)
		check func(t *testing.T, d MeshDiff)
	}{
		{
			name: "nothing in between is an empty diff",
			build: func(g *gen) uint64 {
				g.op("novox", events.NodeRegistered{Node: "novox"}).pass("novox", "novox/1", "A", []string{"a"}, 2, 0)
				return uint64(len(g.evs))
			},
			check: func(t *testing.T, d MeshDiff) {
				if d.Events != 0 || len(d.Nodes) != 0 || len(d.Modules) != 0 {
					t.Errorf("diff = %+v, want nothing", d)
				}
			},
		},
		{
			name: "a node registered, assigned and composed in between",
			build: func(g *gen) uint64 {
				g.op("g14", events.NodeRegistered{Node: "g14"})
				g.op("novox", events.NodeRegistered{Node: "novox"})
				g.assign("m", "novox").pass("novox", "novox/1", "A", []string{"a"}, 2, 0)
				return 1
			},
			check: func(t *testing.T, d MeshDiff) {
				if len(d.Nodes) != 1 {
					t.Fatalf("nodes = %+v, want novox only", d.Nodes)
				}
				n := nodeDiff(t, d, "novox")
				if n.Registered == nil || n.Registered.Position != 2 || n.Registered.Actor != "operator:jo" {
					t.Errorf("registered = %+v", n.Registered)
				}
				if len(n.Modules) != 1 || n.Modules[0].Type != events.TypeModuleAssigned || n.Modules[0].Module != "m" {
					t.Errorf("modules = %+v", n.Modules)
				}
				if n.Composed != 1 || n.Decl == nil || *n.Decl != (Change{"", "novox/1"}) {
					t.Errorf("composed %d, decl %+v", n.Composed, n.Decl)
				}
				if !reflect.DeepEqual(n.RosterAdded, []string{"a"}) || len(n.ResourcesAdded) != 2 {
					t.Errorf("roster added %v, resources added %v", n.RosterAdded, n.ResourcesAdded)
				}
				if n.Sync == nil || n.Sync.To != SyncInSync || n.Health == nil || n.Health.To != HealthConverged {
					t.Errorf("sync %+v health %+v", n.Sync, n.Health)
				}
			},
		},
		{
			name: "a declaration with another resource digest, a routed name gone",
			build: func(g *gen) uint64 {
				g.pass("novox", "novox/1", "A", []string{"a", "b"}, 2, 0)
				from := uint64(len(g.evs))
				res := resources("m", 2, "A")
				res[1].Digest = "sha256:new"
				g.composed("novox", "novox/2", "B", []string{"a"}, res)
				return from
			},
			check: func(t *testing.T, d MeshDiff) {
				n := nodeDiff(t, d, "novox")
				want := []ResourceChange{{Name: "m-1", Kind: "container", Module: "m", From: "sha256:A-1", To: "sha256:new"}}
				if !reflect.DeepEqual(n.ResourcesChanged, want) {
					t.Errorf("changed = %+v, want %+v", n.ResourcesChanged, want)
				}
				if !reflect.DeepEqual(n.RosterRemoved, []string{"b"}) || n.RosterAdded != nil {
					t.Errorf("roster removed %v added %v", n.RosterRemoved, n.RosterAdded)
				}
				if n.Sync != nil {
					t.Errorf("sync %+v: composed, not pushed, changes no sync", n.Sync)
				}
			},
		},
		{
			name: "a hold that appears, and one that clears",
			build: func(g *gen) uint64 {
				g.composed("novox", "novox/1", "A", nil, resources("m", 2, "A"))
				g.applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 2, Applied: 1, Unchanged: 1, Held: []events.Held{held}})
				from := uint64(len(g.evs))
				g.applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 2, Applied: 2, Unchanged: 2})
				return from
			},
			check: func(t *testing.T, d MeshDiff) {
				n := nodeDiff(t, d, "novox")
				if len(n.HoldsCleared) != 1 || n.HoldsCleared[0].Name != "m-0" || len(n.HoldsAppeared) != 0 {
					t.Errorf("cleared %+v appeared %+v", n.HoldsCleared, n.HoldsAppeared)
				}
				if n.Health == nil || *n.Health != (Change{HealthWaitingOnTake, HealthConverged}) {
					t.Errorf("health %+v", n.Health)
				}
			},
		},
		{
			name: "a churn loop opened in between",
			build: func(g *gen) uint64 {
				g.assign("m", "novox").pass("novox", "novox/1", "A", []string{"a"}, 10, 10)
				from := uint64(len(g.evs))
				g.pass("novox", "novox/2", "B", []string{"a"}, 10, 10)
				return from
			},
			check: func(t *testing.T, d MeshDiff) {
				n := nodeDiff(t, d, "novox")
				if len(n.ChurnOpened) != 1 || !n.ChurnOpened[0].Loop || len(n.ChurnClosed) != 0 {
					t.Errorf("opened %+v closed %+v", n.ChurnOpened, n.ChurnClosed)
				}
				if n.Health == nil || n.Health.To != HealthChurning {
					t.Errorf("health %+v", n.Health)
				}
			},
		},
		{
			name: "a loop open at the start that closes in between",
			build: func(g *gen) uint64 {
				g.assign("m", "novox").pass("novox", "novox/1", "A", []string{"a"}, 10, 10).pass("novox", "novox/2", "B", []string{"a"}, 10, 10)
				from := uint64(len(g.evs))
				g.pass("novox", "novox/3", "C", []string{"a"}, 10, 0).pass("novox", "novox/4", "C", []string{"a"}, 10, 0)
				return from
			},
			check: func(t *testing.T, d MeshDiff) {
				n := nodeDiff(t, d, "novox")
				if len(n.ChurnClosed) != 1 || len(n.ChurnOpened) != 0 {
					t.Errorf("opened %+v closed %+v", n.ChurnOpened, n.ChurnClosed)
				}
			},
		},
		{
			name: "a module defined, redefined, built, deployed and removed",
			build: func(g *gen) uint64 {
				mod := func(p events.Payload) { g.add(events.ModuleStream("forge"), "operator:jo", "", p) }
				mod(events.ModuleDefined{Module: "forge", Spec: web})
				mod(events.ModuleDefined{Module: "forge", Spec: web2})
				mod(events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: "sha256:ab"})
				mod(events.ModuleDeployed{Module: "forge", By: events.DeployedByOperator, Builds: []events.Build{{Name: "forge/web", Digest: "sha256:ab"}}})
				mod(events.ModuleRemoved{Module: "forge"})
				mod(events.ModuleDefined{Module: "forge", Spec: web})
				return 1
			},
			check: func(t *testing.T, d MeshDiff) {
				if len(d.Modules) != 1 {
					t.Fatalf("modules = %+v", d.Modules)
				}
				m := d.Modules[0]
				if len(m.Definitions) != 2 || m.Definitions[0].New || !m.Definitions[1].New {
					t.Fatalf("definitions = %+v: a redefinition, then new after the removal", m.Definitions)
				}
				if want := []string{"containers[web].env", "containers[web].image"}; !reflect.DeepEqual(m.Definitions[0].Fields, want) {
					t.Errorf("fields = %v, want %v", m.Definitions[0].Fields, want)
				}
				if len(m.Builds) != 1 || m.Builds[0].Digest != "sha256:ab" || len(m.Deploys) != 1 || m.Deploys[0].By != events.DeployedByOperator {
					t.Errorf("builds %+v deploys %+v", m.Builds, m.Deploys)
				}
				if m.Removed == nil || m.Removed.Position != 5 {
					t.Errorf("removed = %+v", m.Removed)
				}
			},
		},
		{
			name: "a node removed in between",
			build: func(g *gen) uint64 {
				g.op("novox", events.NodeRegistered{Node: "novox"}).pass("novox", "novox/1", "A", []string{"a"}, 1, 0)
				from := uint64(len(g.evs))
				g.op("novox", events.NodeRemoved{Node: "novox"})
				return from
			},
			check: func(t *testing.T, d MeshDiff) {
				n := nodeDiff(t, d, "novox")
				if n.Removed == nil || n.Health == nil || n.Health.To != "" || !reflect.DeepEqual(n.RosterRemoved, []string{"a"}) {
					t.Errorf("removed %+v health %+v roster removed %v", n.Removed, n.Health, n.RosterRemoved)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			from := tc.build(g)
			before := map[string]events.ModuleSpec{}
			for _, ev := range g.evs[:from] {
				if p, err := g.reg.Decode(ev); err == nil {
					if v, ok := p.(events.ModuleDefined); ok {
						before[v.Module] = v.Spec
					}
				}
			}
			d := diffOf(t, g, from, before)
			if d.From.Position != from || d.To.Position != uint64(len(g.evs)) || d.Events != len(g.evs)-int(from) {
				t.Errorf("from %+v to %+v events %d", d.From, d.To, d.Events)
			}
			tc.check(t, d)
		})
	}
}

func TestSpecFields(t *testing.T) {
	base := events.ModuleSpec{
		Routes:     []string{"a"},
		Containers: []events.ContainerSpec{{Name: "web", Image: "x:1"}, {Name: "db", Image: "pg"}},
		Files:      []events.FileSpec{{Path: "/etc/f", Content: "1"}},
	}
	for _, tc := range []struct {
		name   string
		change func(s *events.ModuleSpec)
		want   []string
	}{
		{"the same spec", func(*events.ModuleSpec) {}, nil},
		{"a route", func(s *events.ModuleSpec) { s.Routes = []string{"b"} }, []string{"routes"}},
		{"the upgrade policy", func(s *events.ModuleSpec) { s.Upgrade = events.UpgradeRollOut }, []string{"upgrade"}},
		{"a container's image and command", func(s *events.ModuleSpec) {
			s.Containers[0].Image, s.Containers[0].Command = "x:2", []string{"run"}
		}, []string{"containers[web].command", "containers[web].image"}},
		{"a container removed, another added", func(s *events.ModuleSpec) {
			s.Containers[1] = events.ContainerSpec{Name: "cache", Image: "redis"}
		}, []string{"containers[cache]", "containers[db]"}},
		{"a file's content", func(s *events.ModuleSpec) { s.Files[0].Content = "2" }, []string{"files[/etc/f].content"}},
		{"containers reordered change nothing", func(s *events.ModuleSpec) {
			s.Containers[0], s.Containers[1] = s.Containers[1], s.Containers[0]
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			b.Containers = append([]events.ContainerSpec(nil), base.Containers...)
			b.Files = append([]events.FileSpec(nil), base.Files...)
			tc.change(&b)
			if got := SpecFields(base, b); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SpecFields = %q, want %q", got, tc.want)
			}
		})
	}
}
