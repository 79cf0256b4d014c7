package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"meshplane/declaration"
	"meshplane/events"
)

// Reader is every read compose makes. Each may fail; compose never takes a
// failure for an absence (docs/design.md rule 1, seed 000).
type Reader interface {
	// Nodes lists every registered node, sorted.
	Nodes(ctx context.Context) ([]string, error)
	// Node returns a node's state. An unregistered node is a state with
	// Registered false, not an error; a failure to read is an error.
	Node(ctx context.Context, name string) (Node, error)
	// Module returns a module's state, likewise.
	Module(ctx context.Context, name string) (Module, error)
}

// Composition is a composed declaration with what compose learned on the
// way: the nodes it passed over as incoherent, and the resource digests of
// the node's previous declaration.
type Composition struct {
	Declaration declaration.Declaration
	Skipped     []events.Skipped
	Previous    map[string]string // resource name → digest, of the node's last composed declaration
	// Carried is the node's last declaration that carried its resources
	// (Node.Carried): Stored refers to it when the resources are its.
	Carried Carried
	Version uint64 // the version of the node's stream compose read
	// Unchanged says the declaration is byte-identical to the node's
	// current one (the same digest, warnings and skipped nodes): it then
	// carries the current declaration's id and correlation, and Push appends
	// no declaration.composed for it.
	Unchanged bool
	// Pushed says the current declaration's last push was recorded as a
	// success (Current.Pushed); with Unchanged, a successful send records
	// nothing.
	Pushed bool
	// Bindings names the binding behind each value a container of the
	// node was given by one (events.Bound), for why.
	Bindings []events.Bound
	// Roster is the roster composed against, as its events name it
	// (shared: never modified). Its revision is the Handler's to record
	// (Declaration.RosterRevision, set when the composition is recorded).
	Roster []events.RosterRoute
}

// Compose composes the next declaration of node (its id counts the node's
// composed declarations: "<node>/<Composed+1>"). It reads every node and
// every assigned module through r, then composes purely:
//
//   - the node's own resources, from its assigned modules; if its own module
//     set does not compose, Compose fails with an *IncoherentError;
//   - the roster: every routed name served by a node whose plan composes.
//     A node whose plan does not compose (ErrIncoherent) is passed over and
//     recorded in Skipped. Any read that fails aborts the compose with a
//     *ReadError naming the node and the read; no roster is ever returned
//     beside an error.
//
// Through a MeshCache's reader (Cached), the cache's snapshot of the mesh
// serves the other nodes' part, with the same result (see MeshCache).
//
// An unregistered node is a *Rejection. Identical inputs compose
// byte-identical declarations; one byte-identical to the node's current
// declaration is that declaration (its id and correlation), marked
// Unchanged.
func Compose(ctx context.Context, r Reader, node string, correlation string) (Composition, error) {
	if mc, ok := r.(Cached); ok {
		if c, ok, err := mc.Cache().compose(ctx, node, correlation); ok {
			return c, err
		}
	}
	m, err := gather(ctx, r, node)
	if err != nil {
		return Composition{}, err
	}
	self, ok := m.nodes[node]
	if !ok || !self.Registered {
		return Composition{}, reject(CodeNodeUnknown, "cannot compose for %s: node %s is not registered", node, node)
	}
	own, err := m.plan(self)
	if err != nil {
		return Composition{}, err
	}
	var skipped []events.Skipped
	var routes []declaration.Route
	for _, name := range m.names {
		n := m.nodes[name]
		p := own
		if name != node {
			if p, err = m.plan(n); errors.Is(err, ErrIncoherent) {
				skipped = append(skipped, events.Skipped{Node: name, Reason: err.Error()})
				continue
			} else if err != nil {
				return Composition{}, err
			}
		}
		for _, name := range p.routes {
			routes = append(routes, declaration.Route{Name: name, Address: n.PrivateAddress(), Node: n.Name})
		}
	}
	sortRoutes(routes)
	return composition(self, own, newRoster(routes), skipped, correlation), nil
}

// roster is a declaration's roster with what is made of it once, for every
// declaration that shares it (a MeshCache's snapshot): the hosts file and the
// roster's digest, which the declaration's digest covers.
type roster struct {
	routes []declaration.Route // sorted (sortRoutes); never changed once shared
	hosts  string
	// digest is declaration.RosterDigest of the routes (the same as
	// events.RosterDigest), and mesh the routes as the roster's events name
	// them (roster.changed).
	digest string
	mesh   []events.RosterRoute
}

func newRoster(routes []declaration.Route) roster {
	mesh := make([]events.RosterRoute, len(routes))
	for i, r := range routes {
		mesh[i] = events.RosterRoute(r)
	}
	return roster{routes: routes, hosts: declaration.HostsFile(routes), digest: events.RosterDigest(mesh), mesh: mesh}
}

// sortRoutes orders a roster by name, then by the node serving it.
func sortRoutes(routes []declaration.Route) {
	slices.SortFunc(routes, compareRoutes)
}

func compareRoutes(a, b declaration.Route) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Node, b.Node)
}

// composition is the declaration of self from its own plan, the roster
// (sorted) and the nodes passed over, with what Compose returns beside it.
func composition(self Node, own plan, r roster, skipped []events.Skipped, correlation string) Composition {
	for i := range own.resources {
		own.resources[i].Digest = declaration.Digest(own.resources[i].Spec())
	}
	c := Composition{Skipped: skipped, Roster: r.mesh, Bindings: own.bound}
	d := declaration.Declaration{
		Node:         self.Name,
		ID:           fmt.Sprintf("%s/%d", self.Name, self.Composed+1),
		Adopted:      self.Adopted,
		Taken:        self.TakenModules(),
		Resources:    own.resources,
		Roster:       r.routes,
		Hosts:        r.hosts,
		RosterDigest: r.digest,
		Warnings:     own.warnings,
		Correlation:  correlation,
	}
	d.Digest = d.SpecDigest()
	if cur := self.Current; cur.ID != "" && cur.Digest == d.Digest && cur.Notes == notes(d.Warnings, c.Skipped) {
		d.ID = cur.ID
		if cur.Correlation != "" {
			d.Correlation = cur.Correlation
		}
		c.Unchanged, c.Pushed = true, cur.Pushed
	}
	c.Declaration = d
	c.Previous = self.Declared
	c.Carried = self.Carried
	c.Version = self.Version
	return c
}

// Composed returns the declaration.composed payload of c. It carries the
// spec of every resource whose digest the node's previous declaration did
// not have, so the stream holds every spec once. A declaration that names
// its roster's revision (the Handler records it) names that revision in
// place of the roster's names: the roster's events hold them once
// (events.RosterChanged).
func (c Composition) Composed() events.DeclarationComposed {
	d := c.Declaration
	refs := make([]events.ResourceRef, len(d.Resources))
	var specs map[string]json.RawMessage
	seen := make(map[string]bool, len(c.Previous))
	for _, dg := range c.Previous {
		seen[dg] = true
	}
	for i, r := range d.Resources {
		refs[i] = events.ResourceRef{Name: r.Name, Kind: r.Kind, Module: r.Module, Digest: r.Digest}
		if !seen[r.Digest] {
			if specs == nil {
				specs = map[string]json.RawMessage{}
			}
			specs[r.Digest], _ = json.Marshal(r.Spec()) // a spec always encodes
		}
	}
	var roster []string
	if d.RosterRevision == 0 {
		roster = make([]string, 0, len(d.Roster))
		for _, r := range d.Roster {
			if len(roster) == 0 || roster[len(roster)-1] != r.Name {
				roster = append(roster, r.Name)
			}
		}
	}
	return events.DeclarationComposed{
		Node: d.Node, Declaration: d.ID, Digest: d.Digest, RosterRevision: d.RosterRevision, Roster: roster, Resources: refs,
		Warnings: d.Warnings, Skipped: c.Skipped, Bindings: c.Bindings, Specs: specs,
	}
}

// Stored returns the declaration.composed payload of c as the store keeps
// it: Composed, with its resources by reference when they are, name for
// name, those of the node's last declaration that carried them
// (c.Carried): resources_since, that declaration's event id, in their
// place. A roster-only change (a name added, moved or removed elsewhere in
// the mesh) then costs its node the envelope and a few fields, not its
// whole resource list again; every reader resolves the reference
// (events.ResourceBook, events.Public). A declaration without resources
// is stored as it is: [] costs less than a reference.
func (c Composition) Stored() events.DeclarationComposed {
	p := c.Composed()
	if c.Carried.ID == uuid.Nil || len(p.Resources) == 0 || !slices.Equal(p.Resources, c.Carried.Resources) {
		return p
	}
	p.Resources, p.ResourcesSince = nil, c.Carried.ID.String()
	return p
}

// mesh is everything compose read, so that planning is pure.
type mesh struct {
	names   []string
	nodes   map[string]Node
	modules map[string]Module
	store   *Node // the node holding the artifact store, if any
	target  string
}

func gather(ctx context.Context, r Reader, target string) (*mesh, error) {
	m := &mesh{nodes: map[string]Node{}, modules: map[string]Module{}, target: target}
	names, err := r.Nodes(ctx)
	if err != nil {
		return nil, &ReadError{Node: target, Read: "the node list", Err: err}
	}
	if !slices.Contains(names, target) {
		names = append(names, target)
	}
	sort.Strings(names)
	m.names = names
	var mods []string
	for _, name := range names {
		n, err := r.Node(ctx, name)
		if err != nil {
			return nil, &ReadError{Node: target, Read: "node " + name, Err: err}
		}
		m.nodes[name] = n
		mods = append(mods, n.AssignedModules()...)
		if n.ArtifactStorePort() != "" && m.store == nil {
			m.store = &n
		}
	}
	sort.Strings(mods)
	for _, name := range slices.Compact(mods) {
		mod, err := r.Module(ctx, name)
		if err != nil {
			return nil, &ReadError{Node: target, Read: "module " + name, Err: err}
		}
		m.modules[name] = mod
	}
	return m, nil
}

// plan is one node's own part of the mesh: its resources and routed names.
type plan struct {
	resources []declaration.Resource
	routes    []string
	warnings  []string
	bound     []events.Bound // the bindings behind values (bindings.go)
}

// plan composes n's resources from its assigned modules, without their
// digests (the gatherers need only coherence and routes; Compose digests the
// node's own). It fails only with an *IncoherentError: everything it needs
// was read by gather.
func (m *mesh) plan(n Node) (plan, error) {
	var p plan
	incoherent := func(format string, args ...any) (plan, error) {
		return plan{}, &IncoherentError{Node: n.Name, Reason: fmt.Sprintf(format, args...)}
	}
	owner := map[string]string{}  // resource name → module
	published := map[int]string{} // host port → the container publishing it
	claim := func(name, module string) error {
		if prev, ok := owner[name]; ok {
			if prev == module {
				return &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s claims %s twice", module, name)}
			}
			return &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("modules %s and %s both claim %s", prev, module, name)}
		}
		owner[name] = module
		return nil
	}
	for _, modName := range n.AssignedModules() {
		mod, ok := m.modules[modName]
		if !ok || !mod.Defined {
			return incoherent("module %s is assigned but not defined", modName)
		}
		p.routes = append(p.routes, mod.Spec.Routes...)
		dirs := map[string]uint32{}
		for _, d := range mod.Spec.Directories {
			mode, _ := parseMode(d.Mode, 0o755) // validated at define
			dirs[d.Path] = mode
		}
		for _, c := range mod.Spec.Containers {
			if err := claim(c.Name, modName); err != nil {
				return plan{}, err
			}
			spec, warnings, err := m.container(n, mod, c)
			if err != nil {
				return plan{}, err
			}
			p.warnings = append(p.warnings, warnings...)
			for _, pub := range spec.Publish {
				who := fmt.Sprintf("module %s's container %s", modName, c.Name)
				if prev, ok := published[pub.HostPort]; ok {
					return incoherent("%s and %s both publish port %d of node %s", prev, who, pub.HostPort, n.Name)
				}
				published[pub.HostPort] = who
			}
			p.resources = append(p.resources, declaration.Resource{Name: c.Name, Kind: declaration.KindContainer, Module: modName, Container: spec})
			files, bound, err := m.reachFiles(n, mod, c)
			if err != nil {
				return plan{}, err
			}
			p.bound = append(p.bound, bound...)
			for _, f := range files {
				if err := claim(f.Name, modName); err != nil {
					return plan{}, err
				}
				p.resources = append(p.resources, f)
			}
			for _, mt := range c.Mounts {
				if mt.Volume {
					continue // the engine's, not a directory of the host
				}
				if _, ok := dirs[mt.Source]; !ok {
					dirs[mt.Source] = 0o755
				}
			}
		}
		for path, mode := range dirs {
			if err := claim(path, modName); err != nil {
				return plan{}, err
			}
			p.resources = append(p.resources, declaration.Resource{Name: path, Kind: declaration.KindDirectory, Module: modName, Directory: &declaration.Directory{Path: path, Mode: mode}})
		}
		for _, f := range mod.Spec.Files {
			if err := claim(f.Path, modName); err != nil {
				return plan{}, err
			}
			mode, _ := parseMode(f.Mode, 0o644)
			p.resources = append(p.resources, declaration.Resource{Name: f.Path, Kind: declaration.KindFile, Module: modName, File: &declaration.File{Path: f.Path, Mode: mode, Content: f.Content}})
		}
	}
	sort.Slice(p.resources, func(i, j int) bool { return p.resources[i].Name < p.resources[j].Name })
	sortBound(p.bound)
	sort.Strings(p.routes)
	p.routes = slices.Compact(p.routes)
	return p, nil
}

// container composes one container's spec on node n. Ports are read where
// they are used (docs/design.md rule 6): from what the node was given, now; a
// port the node was not given is a setting that reaches nothing (rule 1),
// and the node does not compose, naming it. An artifact's image reference
// is composed here, from the node holding the artifact store.
func (m *mesh) container(n Node, mod Module, c events.ContainerSpec) (*declaration.Container, []string, error) {
	var warnings []string
	env := map[string]string{}
	for k, v := range c.Env {
		env[k] = v
	}
	for _, pr := range c.Ports {
		port := n.Port(pr.Port)
		if port == "" {
			return nil, nil, &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s's container %s reads port %q of node %s into %s, and the node was not given it (mesh node set %s port.%s=PORT)", mod.Name, c.Name, pr.Port, n.Name, pr.Env, n.Name, pr.Port)}
		}
		env[pr.Env] = port
	}
	spec := &declaration.Container{}
	reached, err := m.reachEnv(n, mod, c, env, spec)
	if err != nil {
		return nil, nil, err
	}
	warnings = append(warnings, reached...)
	image := c.Image
	if c.Artifact != "" {
		ref, err := m.artifactRef(n, mod, c.Artifact)
		if err != nil {
			return nil, nil, err
		}
		image = ref
	}
	spec.Image, spec.Command = image, c.Command
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		spec.Env = append(spec.Env, k+"="+env[k])
	}
	if spec.Secrets, err = secretEnv(n, mod, c); err != nil {
		return nil, nil, err
	}
	for _, mt := range c.Mounts {
		target := mt.Target
		if target == "" {
			target = mt.Source
		}
		spec.Mounts = append(spec.Mounts, declaration.Mount{Source: mt.Source, Target: target, Volume: mt.Volume, ReadOnly: mt.ReadOnly})
	}
	spec.Mounts = append(spec.Mounts, declaration.Mount{Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true})
	sort.Slice(spec.Mounts, func(i, j int) bool { return spec.Mounts[i].Target < spec.Mounts[j].Target })
	spec.Networks = slices.Sorted(slices.Values(c.Networks))
	if err := options(n, mod, c, spec); err != nil {
		return nil, nil, err
	}
	if err := rollout(n, mod, c, spec); err != nil {
		return nil, nil, err
	}
	return spec, warnings, nil
}

// secretEnv composes a container's secret variables: each names its secret
// and the digest the module's definition holds, sorted by variable. A
// secret with no digest (never set when the module was defined) is a
// setting that reaches nothing: the node does not compose.
func secretEnv(n Node, mod Module, c events.ContainerSpec) ([]declaration.Secret, error) {
	if len(c.Secrets) == 0 {
		return nil, nil
	}
	out := make([]declaration.Secret, 0, len(c.Secrets))
	for _, k := range slices.Sorted(maps.Keys(c.Secrets)) {
		ref := c.Secrets[k]
		if ref.Digest == "" {
			return nil, &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s's container %s reads secret %s, which is not set (mesh secret set %s)", mod.Name, c.Name, ref.Secret, ref.Secret)}
		}
		out = append(out, declaration.Secret{Env: k, Secret: ref.Secret, Digest: ref.Digest})
	}
	return out, nil
}

// artifactRef composes the image reference of the build of artifact the
// module was last deployed with (never merely its latest recorded: a build
// is not a deployment, seed 002), at the artifact store's address for n
// (ArtifactStoreAddress). No artifact store reachable is a setting that
// reaches nothing: the node does not compose.
func (m *mesh) artifactRef(n Node, mod Module, artifact string) (string, error) {
	digest, ok := mod.Deployed[artifact]
	if !ok {
		if _, recorded := mod.Artifacts[artifact]; recorded {
			return "", &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s runs artifact %s, none of whose recorded builds is deployed (mesh deploy %s)", mod.Name, artifact, mod.Name)}
		}
		return "", &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s runs artifact %s, which has no recorded build", mod.Name, artifact)}
	}
	if m.store == nil {
		return "", &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s runs artifact %s, and no node holds the artifact store", mod.Name, artifact)}
	}
	addr, err := ArtifactStoreAddress(*m.store, n.Name)
	if err != nil {
		return "", &IncoherentError{Node: n.Name, Reason: fmt.Sprintf("module %s runs artifact %s, and the artifact store on %s has no private address to reach it by", mod.Name, artifact, m.store.Name)}
	}
	return fmt.Sprintf("%s/%s@%s", addr, artifact, digest), nil
}
