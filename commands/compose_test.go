package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"meshplane/declaration"
	"meshplane/events"
)

// fakeMesh is a Reader over in-memory states, with reads that can fail.
type fakeMesh struct {
	nodes   map[string]Node
	modules map[string]Module
	fail    map[string]error // "node g14", "module forge", "nodes" → error
}

func newFakeMesh() *fakeMesh {
	return &fakeMesh{nodes: map[string]Node{}, modules: map[string]Module{}, fail: map[string]error{}}
}

func (f *fakeMesh) Nodes(ctx context.Context) ([]string, error) {
	if err := f.fail["nodes"]; err != nil {
		return nil, err
	}
	var out []string
	for n := range f.nodes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

func (f *fakeMesh) Node(ctx context.Context, name string) (Node, error) {
	if err := f.fail["node "+name]; err != nil {
		return Node{}, err
	}
	return f.nodes[name], nil
}

func (f *fakeMesh) Module(ctx context.Context, name string) (Module, error) {
	if err := f.fail["module "+name]; err != nil {
		return Module{}, err
	}
	return f.modules[name], nil
}

// apply folds payloads into the fake mesh, as the store would.
func (f *fakeMesh) apply(ps ...events.Payload) *fakeMesh {
	for _, p := range ps {
		switch p := p.(type) {
		case events.ModuleDefined:
			m := f.modules[p.Module]
			f.modules[p.Module] = EvolveModule(m, events.Event{Version: m.Version + 1}, p)
		case events.ArtifactRecorded:
			m := f.modules[p.Module]
			f.modules[p.Module] = EvolveModule(m, events.Event{Version: m.Version + 1}, p)
		case events.ModuleDeployed:
			m := f.modules[p.Module]
			f.modules[p.Module] = EvolveModule(m, events.Event{Version: m.Version + 1}, p)
		default:
			node := nodeName(p)
			n := f.nodes[node]
			f.nodes[node] = EvolveNode(n, events.Event{Version: n.Version + 1}, p)
		}
	}
	return f
}

func nodeName(p events.Payload) string {
	b, _ := json.Marshal(p)
	var v struct{ Node string }
	_ = json.Unmarshal(b, &v)
	return v.Node
}

func twoNodes() *fakeMesh {
	return newFakeMesh().apply(
		events.NodeRegistered{Node: "novox"},
		events.NodeRegistered{Node: "g14"},
		events.NodeSettingSet{Node: "g14", Key: events.SettingPrivateAddress, Value: "10.1.0.4"},
		events.ModuleDefined{Module: "searxng", Spec: events.ModuleSpec{
			Routes: []string{"searxng.zurag.be"}, Containers: []events.ContainerSpec{{Name: "searxng", Image: "searxng:1"}}}},
		events.ModuleDefined{Module: "proxy", Spec: events.ModuleSpec{
			Routes: []string{"proxy.novox.be"}, Containers: []events.ContainerSpec{{Name: "proxy", Image: "caddy:2",
				Mounts: []events.Mount{{Source: "/var/lib/proxy"}}}}}},
		events.ModuleAssigned{Module: "searxng", Node: "g14"},
		events.ModuleAssigned{Module: "proxy", Node: "novox"},
	)
}

func TestComposeGathersTheRoster(t *testing.T) {
	c, err := Compose(context.Background(), twoNodes(), "novox", "corr")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Declaration
	if d.ID != "novox/1" {
		t.Errorf("ID = %q", d.ID)
	}
	if got := c.Composed().Roster; !slices.Equal(got, []string{"proxy.novox.be", "searxng.zurag.be"}) {
		t.Errorf("roster = %v", got)
	}
	if !strings.Contains(d.Hosts, "10.1.0.4\tsearxng.zurag.be\n") {
		t.Errorf("hosts file lacks g14's name:\n%s", d.Hosts)
	}
	var names []string
	for _, r := range d.Resources {
		names = append(names, r.Kind+":"+r.Name)
	}
	if want := []string{"directory:/var/lib/proxy", "container:proxy"}; !slices.Equal(names, want) {
		t.Errorf("resources = %v, want %v", names, want)
	}
}

// Seed 000: a node whose plan cannot be read withdraws nothing; the compose
// fails naming it, and no roster comes back beside the error.
func TestComposeFailsOnAReadFailureNamingTheNode(t *testing.T) {
	for _, read := range []string{"node g14", "module searxng", "nodes"} {
		t.Run(read, func(t *testing.T) {
			m := twoNodes()
			m.fail[read] = errors.New("the database system is not yet accepting connections")
			c, err := Compose(context.Background(), m, "novox", "corr")
			var re *ReadError
			if !errors.As(err, &re) {
				t.Fatalf("Compose = %v; want a *ReadError", err)
			}
			if errors.Is(err, ErrIncoherent) {
				t.Fatalf("a read failure was taken for incoherence: %v", err)
			}
			if !strings.Contains(err.Error(), strings.TrimPrefix(read, "nodes")) || re.Node != "novox" {
				t.Errorf("error %q does not name the read %q and the node", err, read)
			}
			if c.Declaration.Roster != nil || c.Declaration.Resources != nil {
				t.Errorf("a roster came back beside the error: %+v", c.Declaration)
			}
		})
	}
}

// One incoherent node does not cost the rest their names, and is recorded.
func TestComposePassesOverAnIncoherentNode(t *testing.T) {
	m := twoNodes().apply(
		events.NodeRegistered{Node: "ace"},
		events.ModuleDefined{Module: "ace-web", Spec: events.ModuleSpec{Routes: []string{"ace.novox.be"},
			Containers: []events.ContainerSpec{{Name: "searxng", Image: "x:1"}}}},
		events.ModuleAssigned{Module: "ace-web", Node: "ace"},
		events.ModuleAssigned{Module: "searxng", Node: "ace"}, // both claim container "searxng"
	)
	c, err := Compose(context.Background(), m, "novox", "corr")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Composed().Roster; !slices.Equal(got, []string{"proxy.novox.be", "searxng.zurag.be"}) {
		t.Errorf("roster = %v", got)
	}
	if len(c.Skipped) != 1 || c.Skipped[0].Node != "ace" || !strings.Contains(c.Skipped[0].Reason, "both claim searxng") {
		t.Errorf("skipped = %+v", c.Skipped)
	}
	// The incoherent node's own compose fails, as a statement about it.
	_, err = Compose(context.Background(), m, "ace", "corr")
	if !errors.Is(err, ErrIncoherent) {
		t.Fatalf("compose of the incoherent node = %v, want ErrIncoherent", err)
	}
}

// Rule 2: the roster is not part of a container's identity.
func TestRosterDoesNotChangeContainerDigests(t *testing.T) {
	m := twoNodes()
	before, err := Compose(context.Background(), m, "novox", "a")
	if err != nil {
		t.Fatal(err)
	}
	m.apply(events.ModuleReleased{Module: "searxng", Node: "g14"})
	after, err := Compose(context.Background(), m, "novox", "b")
	if err != nil {
		t.Fatal(err)
	}
	if before.Declaration.Digest == after.Declaration.Digest {
		t.Fatal("declaration digest did not change with the roster")
	}
	if before.Declaration.Hosts == after.Declaration.Hosts {
		t.Fatal("hosts file did not change with the roster")
	}
	if !slices.Equal(before.Composed().Resources, after.Composed().Resources) {
		t.Fatalf("resource digests changed with the roster:\n%v\n%v", before.Composed().Resources, after.Composed().Resources)
	}
}

func TestComposeIsDeterministic(t *testing.T) {
	var first []byte
	for i := 0; i < 20; i++ {
		c, err := Compose(context.Background(), twoNodes(), "novox", "corr")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c.Composed())
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			t.Fatalf("compose %d differs:\n%s\n%s", i, first, b)
		}
	}
}

// Rule 6: ports read where used; a port the node was not given is a setting
// that reaches nothing (rule 1): the compose fails naming it, never a
// variable silently left out.
func TestComposeReadsPortsAtComposeTime(t *testing.T) {
	spec := events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1",
		Ports: []events.PortRead{{Port: "store", Env: "STORE_PORT"}}}}}
	m := newFakeMesh().apply(events.NodeRegistered{Node: "novox"},
		events.ModuleDefined{Module: "forge", Spec: spec}, events.ModuleAssigned{Module: "forge", Node: "novox"})
	_, err := Compose(context.Background(), m, "novox", "")
	var ie *IncoherentError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `port "store"`) || !strings.Contains(err.Error(), "STORE_PORT") {
		t.Fatalf("compose with an unfilled port: err = %v, want an IncoherentError naming port \"store\" and STORE_PORT", err)
	}
	m.apply(events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"})
	c, err := Compose(context.Background(), m, "novox", "")
	if err != nil {
		t.Fatal(err)
	}
	web, _ := c.Declaration.Resource("web")
	if !slices.Contains(web.Container.Env, "STORE_PORT=6852") {
		t.Errorf("env = %v, want STORE_PORT=6852", web.Container.Env)
	}
}

func TestComposeArtifactReferences(t *testing.T) {
	spec := events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Artifact: "forge/web"}}}
	base := func() *fakeMesh {
		return newFakeMesh().apply(events.NodeRegistered{Node: "novox"}, events.NodeRegistered{Node: "g14"},
			events.ModuleDefined{Module: "forge", Spec: spec},
			events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"})
	}
	tests := []struct {
		name       string
		on         string
		extra      []events.Payload
		image      string
		incoherent string
	}{
		{"store on the same node, no address yet: loopback", "novox",
			[]events.Payload{events.NodeSettingSet{Node: "novox", Key: events.SettingArtifactStore, Value: "5000"}},
			"127.0.0.1:5000/forge/web@sha256:ab12", ""},
		{"store on the same node with an address", "novox",
			[]events.Payload{events.NodeSettingSet{Node: "novox", Key: events.SettingArtifactStore, Value: "5000"},
				events.NodeSettingSet{Node: "novox", Key: events.SettingPrivateAddress, Value: "10.1.0.3"}},
			"10.1.0.3:5000/forge/web@sha256:ab12", ""},
		{"store on another node", "g14",
			[]events.Payload{events.NodeSettingSet{Node: "novox", Key: events.SettingArtifactStore, Value: "5000"},
				events.NodeSettingSet{Node: "novox", Key: events.SettingPrivateAddress, Value: "10.1.0.3"}},
			"10.1.0.3:5000/forge/web@sha256:ab12", ""},
		{"store on another node without an address reaches nothing", "g14",
			[]events.Payload{events.NodeSettingSet{Node: "novox", Key: events.SettingArtifactStore, Value: "5000"}},
			"", "no private address"},
		{"no artifact store reaches nothing", "novox", nil, "", "no node holds the artifact store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base().apply(tt.extra...).apply(events.ModuleAssigned{Module: "forge", Node: tt.on})
			c, err := Compose(context.Background(), m, tt.on, "")
			if tt.incoherent != "" {
				if !errors.Is(err, ErrIncoherent) || !strings.Contains(err.Error(), tt.incoherent) {
					t.Fatalf("Compose = %v, want incoherent naming %q", err, tt.incoherent)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			web, _ := c.Declaration.Resource("web")
			if web.Container.Image != tt.image {
				t.Fatalf("image = %q, want %q", web.Container.Image, tt.image)
			}
		})
	}
}

// TestComposeRunsTheDeployedBuild: a build is not a deployment (seed 002).
// Compose runs the build last deployed; a history recorded before upgrade
// policies (artifact.recorded without upgrade, no module.deployed) composes
// as it always did: its latest build.
func TestComposeRunsTheDeployedBuild(t *testing.T) {
	const a, b = "sha256:aaaa", "sha256:bbbb"
	spec := events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Artifact: "forge/web"}}}
	rec := func(d, policy string) events.ArtifactRecorded {
		return events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: d, Upgrade: policy}
	}
	dep := func(d, by string) events.ModuleDeployed {
		return events.ModuleDeployed{Module: "forge", Builds: []events.Build{{Name: "forge/web", Digest: d}}, By: by}
	}
	tests := []struct {
		name    string
		history []events.Payload
		want    string // the digest the image runs, or an incoherence's words
	}{
		{"before policies: the latest recorded", []events.Payload{rec(a, ""), rec(b, "")}, b},
		{"manual: a second build waits", []events.Payload{rec(a, "manual"), dep(a, "first-build"), rec(b, "manual")}, a},
		{"manual: deployed", []events.Payload{rec(a, "manual"), dep(a, "first-build"), rec(b, "manual"), dep(b, "operator")}, b},
		{"manual over a history before policies: waits", []events.Payload{rec(a, ""), rec(b, "manual")}, a},
		{"roll-out", []events.Payload{rec(a, "roll-out"), dep(a, "roll-out"), rec(b, "roll-out"), dep(b, "roll-out")}, b},
		{"rolled back", []events.Payload{rec(a, "manual"), dep(a, "first-build"), rec(b, "manual"), dep(b, "operator"), dep(a, "operator")}, a},
		{"recorded, never deployed", []events.Payload{rec(a, "manual")}, "mesh deploy forge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFakeMesh().apply(events.NodeRegistered{Node: "novox"},
				events.NodeSettingSet{Node: "novox", Key: events.SettingArtifactStore, Value: "5000"},
				events.ModuleDefined{Module: "forge", Spec: spec}).
				apply(tt.history...).apply(events.ModuleAssigned{Module: "forge", Node: "novox"})
			c, err := Compose(context.Background(), m, "novox", "")
			if !strings.HasPrefix(tt.want, "sha256:") {
				if !errors.Is(err, ErrIncoherent) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Compose = %v, want incoherent naming %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			web, _ := c.Declaration.Resource("web")
			if want := "127.0.0.1:5000/forge/web@" + tt.want; web.Container.Image != want {
				t.Fatalf("image = %q, want %q", web.Container.Image, want)
			}
		})
	}
}

func ExampleCompose() {
	c, _ := Compose(context.Background(), twoNodes(), "novox", "")
	fmt.Print(c.Declaration.Hosts)
	// Output:
	// # meshplane roster: every routed name in the mesh. Rewritten in place.
	// # proxy.novox.be: served by novox, which has no private address yet
	// 10.1.0.4	searxng.zurag.be
}

// TestDigestOfSharedRoster: a declaration's digest covers its roster by
// the roster's digest (declaration.SpecDigest), which is the digest the
// roster's events record (events.RosterDigest): a compose hashes its own
// node's part only, and the roster it names is the one the store holds.
func TestDigestOfSharedRoster(t *testing.T) {
	res := []declaration.Resource{
		{Name: "web", Kind: declaration.KindContainer, Module: "web", Digest: "sha256:ab", Container: &declaration.Container{Image: "nginx:1", Env: []string{"A=<b&c>"}}},
		{Name: "/srv/web", Kind: declaration.KindDirectory, Module: "web", Directory: &declaration.Directory{Path: "/srv/web", Mode: 0o755}},
	}
	routes := []declaration.Route{
		{Name: "a.mesh.example", Address: "10.0.0.1", Node: "a"},
		{Name: "b<&>.mesh.example", Node: "b"},
	}
	seen := map[string]string{}
	for _, tc := range []struct {
		name      string
		adopted   bool
		taken     []string
		resources []declaration.Resource
		routes    []declaration.Route
	}{
		{name: "empty"},
		{name: "no roster", resources: res},
		{name: "every field", adopted: true, taken: []string{"forge", "web"}, resources: res, routes: routes},
		{name: "another roster", adopted: true, taken: []string{"forge", "web"}, resources: res, routes: routes[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRoster(tc.routes)
			if want := declaration.RosterDigest(tc.routes); r.digest != want {
				t.Errorf("roster digest = %s, declaration.RosterDigest = %s", r.digest, want)
			}
			d := declaration.Declaration{Adopted: tc.adopted, Taken: tc.taken, Resources: tc.resources, Roster: r.routes, RosterDigest: r.digest}
			got := d.SpecDigest()
			want := declaration.Digest(struct {
				Adopted      bool
				Taken        []string
				Resources    []declaration.Resource
				RosterDigest string
			}{tc.adopted, tc.taken, tc.resources, declaration.RosterDigest(tc.routes)})
			if got != want {
				t.Errorf("SpecDigest = %s, declaration.Digest = %s", got, want)
			}
			if prev, ok := seen[got]; ok {
				t.Errorf("%s digests as %s did", tc.name, prev)
			}
			seen[got] = tc.name
		})
	}
	if got := newRoster(routes).hosts; got != declaration.HostsFile(routes) {
		t.Errorf("the composed hosts file is not declaration.HostsFile's:\n%s", got)
	}
}
