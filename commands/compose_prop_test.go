package commands

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"meshplane/events"
)

// errInjected is the failure failAt injects.
var errInjected = errors.New("injected: the database system is starting up")

// failAt is a Reader whose reads fail from one drawn read on: reads are
// counted once armed, the read numbered at (from 0) fails, and so does
// every later read of the same thing (the same node, module or list), as a
// row that cannot be read stays unreadable. at < 0 fails nothing, and
// counts.
type failAt struct {
	r      Reader
	armed  bool
	at     int
	n      int             // reads counted so far
	failed map[string]bool // what the failed read read
	reads  []string        // every read counted, in order
}

func newFailAt(r Reader) *failAt { return &failAt{r: r, at: -1, failed: map[string]bool{}} }

func (f *failAt) arm(at int) { f.armed, f.at = true, at }

func (f *failAt) read(what string) error {
	if !f.armed {
		return nil
	}
	if f.failed[what] {
		return errInjected
	}
	f.reads = append(f.reads, what)
	f.n++
	if f.n-1 == f.at {
		f.failed[what] = true
		return errInjected
	}
	return nil
}

func (f *failAt) Nodes(ctx context.Context) ([]string, error) {
	if err := f.read("nodes"); err != nil {
		return nil, err
	}
	return f.r.Nodes(ctx)
}

func (f *failAt) Node(ctx context.Context, name string) (Node, error) {
	if err := f.read("node " + name); err != nil {
		return Node{}, err
	}
	return f.r.Node(ctx, name)
}

func (f *failAt) Module(ctx context.Context, name string) (Module, error) {
	if err := f.read("module " + name); err != nil {
		return Module{}, err
	}
	return f.r.Module(ctx, name)
}

// drawMesh draws a mesh of up to 5 nodes and 4 modules: modules with
// routes, containers by image or by recorded artifact, mounts and port
// reads, container names shared between modules (so that a node assigned
// both is incoherent), a module assigned but never defined; nodes with a
// private address, a port, the artifact store, and assigned modules.
func drawMesh(t *rapid.T) *fakeMesh {
	m := newFakeMesh()
	modules := rapid.IntRange(0, 4).Draw(t, "modules")
	for i := range modules {
		name := fmt.Sprintf("m%d", i)
		if rapid.IntRange(0, 5).Draw(t, name+" defined") == 0 {
			continue // assigned, never defined
		}
		var spec events.ModuleSpec
		if rapid.Bool().Draw(t, name+" routed") {
			spec.Routes = []string{name + ".mesh.example"}
		}
		for k := range rapid.IntRange(1, 2).Draw(t, name+" containers") {
			c := events.ContainerSpec{Name: fmt.Sprintf("c%d", rapid.IntRange(0, 3).Draw(t, "container name"))}
			if k == 0 && rapid.Bool().Draw(t, name+" artifact") {
				c.Artifact = name + "/app"
			} else {
				c.Image = fmt.Sprintf("registry.example/%s:%d", name, k)
			}
			if rapid.Bool().Draw(t, "mount") {
				c.Mounts = []events.Mount{{Source: "/var/lib/" + name}}
			}
			if rapid.Bool().Draw(t, "port read") {
				c.Ports = []events.PortRead{{Port: "store", Env: "STORE_PORT"}}
			}
			spec.Containers = append(spec.Containers, c)
		}
		m.apply(events.ModuleDefined{Module: name, Spec: spec})
		if rapid.Bool().Draw(t, name+" build recorded") {
			m.apply(events.ArtifactRecorded{Module: name, Name: name + "/app", Digest: "sha256:ab12"})
		}
	}
	for i := range rapid.IntRange(1, 5).Draw(t, "nodes") {
		node := fmt.Sprintf("n%d", i)
		ps := []events.Payload{events.NodeRegistered{Node: node}}
		if rapid.Bool().Draw(t, node+" private address") {
			ps = append(ps, events.NodeSettingSet{Node: node, Key: events.SettingPrivateAddress, Value: fmt.Sprintf("10.0.0.%d", i+1)})
		}
		if rapid.Bool().Draw(t, node+" port") {
			ps = append(ps, events.NodeSettingSet{Node: node, Key: events.SettingPortPrefix + "store", Value: "6852"})
		}
		if rapid.IntRange(0, 3).Draw(t, node+" artifact store") == 0 {
			ps = append(ps, events.NodeSettingSet{Node: node, Key: events.SettingArtifactStore, Value: "5000"})
		}
		for k := range modules {
			if rapid.Bool().Draw(t, fmt.Sprintf("%s assigned m%d", node, k)) {
				ps = append(ps, events.ModuleAssigned{Module: fmt.Sprintf("m%d", k), Node: node})
			}
		}
		m.apply(ps...)
	}
	return m
}

// Property (docs/design.md rule 1, seed 000): a compose whose read fails yields
// no declaration. Whatever the mesh and whichever read fails (any of the
// reads the same compose makes when none fails), Compose returns a
// *ReadError naming the node composed, wrapping the failure, and an empty
// Composition: no roster, no resources, nothing to push. The same holds
// through a MeshCache, prepared before the failure, whose snapshot must
// never stand in for the read that failed.
func TestAFailedReadNeverYieldsADeclarationProperty(t *testing.T) {
	ctx := context.Background()
	composed := 0
	rapid.Check(t, func(t *rapid.T) {
		mesh := drawMesh(t)
		target := rapid.SampledFrom([]string{"n0", "n1", "n2", "n3", "n4", "ghost"}).Draw(t, "target")
		cached := rapid.Bool().Draw(t, "through a MeshCache")

		// compose composes target through a fresh failAt armed at at.
		compose := func(at int) (Composition, *failAt, error) {
			f := newFailAt(mesh)
			var r Reader = f
			if cached {
				cache := NewMeshCache(f)
				cache.Prepare(ctx)
				r = cache.For(target)
			}
			f.arm(at)
			c, err := Compose(ctx, r, target, "corr")
			return c, f, err
		}

		clean, counted, err := compose(-1)
		if err == nil && len(clean.Declaration.Resources) > 0 {
			composed++
		}
		if len(counted.reads) == 0 {
			t.Fatalf("the compose read nothing")
		}
		at := rapid.IntRange(0, len(counted.reads)-1).Draw(t, "failing read")
		c, f, err := compose(at)
		var re *ReadError
		if !errors.As(err, &re) || !errors.Is(err, errInjected) {
			t.Fatalf("read %d (%s) of %v failed; Compose = %v, want a *ReadError of it", at, counted.reads[at], counted.reads, err)
		}
		if re.Node != target {
			t.Fatalf("the *ReadError names %s, composing %s: %v", re.Node, target, err)
		}
		if !reflect.DeepEqual(c, Composition{}) {
			t.Fatalf("read %s failed (reads %v), yet Compose returned %+v", counted.reads[at], f.reads, c)
		}
	})
	if composed == 0 {
		t.Errorf("no drawn mesh composed a declaration with resources: the property was never tested on one")
	}
}
