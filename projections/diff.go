package projections

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"meshplane/events"
)

// A mesh diff (mesh diff --from A --to B) is what changed in the mesh
// between two positions of the stream, per node and per module. It is
// computed from three things only, so it stays a pure function:
//
//   - the projections' state at A and at B (StateOf of a Set folded to
//     each): each node's sync, health, current declaration, roster, holds
//     and churn episodes;
//   - the events in (A, B], decoded (Decoded): the commands and records
//     that say what happened between them (definitions, assignments,
//     takes, releases, builds, deploys, compositions, registrations and
//     removals);
//   - each module's definition at A, for the modules redefined in between
//     (what a redefinition changed is against the definition before it).
//
// A field of a resource that changed is the caller's to explain (it needs
// the specs, which a declaration names by digest): the diff gives each
// changed resource's two digests.

// EndState is the part of the projections' state at one end of a diff that
// the diff compares.
type EndState struct {
	Position uint64
	At       time.Time // the time of the event at Position (zero at 0)
	Nodes    map[string]NodeEnd
}

// NodeEnd is one node's state at one end of a diff.
type NodeEnd struct {
	Sync, Health string
	Declaration  string               // the current composed declaration, "" if none
	Roster       []string             // its routed names
	Resources    []events.ResourceRef // its resources
	Holds        []Hold
	Episodes     []Episode
}

// StateOf reads what a diff compares from s, folded to pos (at: the time of
// the event at pos).
func StateOf(s *Set, pos uint64, at time.Time) EndState {
	st := EndState{Position: pos, At: at, Nodes: map[string]NodeEnd{}}
	for _, node := range s.Status.Nodes() {
		ns, err := s.Status.Of(node)
		if err != nil {
			continue // removed under a reader: not in this state
		}
		n := NodeEnd{Sync: ns.Sync, Health: ns.Health, Episodes: s.Churn.Episodes(node)}
		if cur, err := s.Roster.Current(node); err == nil {
			n.Declaration, n.Roster, n.Resources = cur.Declaration, cur.Roster, cur.Resources
		}
		if hs, err := s.Holds.Of(node); err == nil {
			n.Holds = hs
		}
		st.Nodes[node] = n
	}
	return st
}

// Decoded is one stored event and its decoded payload.
type Decoded struct {
	Event   events.Event
	Payload events.Payload
}

// MeshDiff is what changed in the mesh from one position to another.
type MeshDiff struct {
	From, To Mark
	Events   int          // events in (From, To]
	Nodes    []NodeDiff   // the nodes anything changed on, by name
	Modules  []ModuleDiff // the modules anything changed on, by name
}

// EventMark is one event a diff names: where, when and by whom.
type EventMark struct {
	Position uint64    `json:"position"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor,omitempty"`
}

// Change is a value at A and at B.
type Change struct {
	From, To string
}

// NodeDiff is what changed on one node.
type NodeDiff struct {
	Node       string
	Registered *EventMark // registered in between
	Removed    *EventMark // removed in between
	Adopted    *EventMark
	// Modules are its assignments, takes and releases, in order.
	Modules  []ModuleEvent
	Sync     *Change // nil when the same at both ends
	Health   *Change
	Composed int     // declarations composed in between
	Decl     *Change // its current declaration, when another
	// Roster names routed to it that came and went, sorted.
	RosterAdded, RosterRemoved  []string
	ResourcesAdded              []events.ResourceRef
	ResourcesRemoved            []events.ResourceRef
	ResourcesChanged            []ResourceChange
	HoldsAppeared, HoldsCleared []Hold
	// ChurnOpened are the episodes detected in between (still open or
	// not: an episode starts at its first heavy pass, which may be before
	// the diff's start); ChurnClosed those that ended in between.
	ChurnOpened, ChurnClosed []Episode
}

// ModuleEvent is an assignment, a take or a release of a module on a node.
type ModuleEvent struct {
	EventMark
	Type   string // events.TypeModuleAssigned, ...Taken, ...Released
	Module string
}

// ResourceChange is a resource declared at both ends with another spec.
type ResourceChange struct {
	Name, Kind, Module string
	From, To           string // spec digests
}

// ModuleDiff is what changed of one module.
type ModuleDiff struct {
	Module      string
	Definitions []Definition // module.defined in between, in order
	Removed     *EventMark
	Builds      []BuildMark // artifact.recorded
	Deploys     []DeployMark
}

// Definition is one module.defined: the first of the module (New, or
// again after a removal) or a redefinition, with the spec's top-level
// fields it changed ("containers[web].env", "routes").
type Definition struct {
	EventMark
	New    bool
	Fields []string
}

// BuildMark is one artifact.recorded.
type BuildMark struct {
	EventMark
	Name, Digest string
}

// DeployMark is one module.deployed.
type DeployMark struct {
	EventMark
	By     string
	Builds []events.Build
}

// DiffMesh is what changed from a to b: evs are the events in (a, b], in
// position order, and before each module's spec at a (for those it has,
// defined and not removed). It reads nothing else.
func DiffMesh(a, b EndState, evs []Decoded, before map[string]events.ModuleSpec) MeshDiff {
	d := MeshDiff{
		From:   Mark{Position: a.Position, At: a.At},
		To:     Mark{Position: b.Position, At: b.At},
		Events: len(evs),
	}
	nodes := map[string]*NodeDiff{}
	node := func(name string) *NodeDiff {
		n, ok := nodes[name]
		if !ok {
			n = &NodeDiff{Node: name}
			nodes[name] = n
		}
		return n
	}
	modules := foldModuleEvents(evs, before)
	foldNodeEvents(evs, node)
	for name := range keys(a.Nodes, b.Nodes) {
		compareNode(node(name), a.Nodes[name], b.Nodes[name], a.Position)
	}
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		if n := nodes[name]; !n.empty() {
			d.Nodes = append(d.Nodes, *n)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(modules)) {
		d.Modules = append(d.Modules, *modules[name])
	}
	return d
}

// keys is the set of keys of a and b.
func keys[V any](a, b map[string]V) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func markOf(ev events.Event) EventMark {
	return EventMark{Position: ev.Position, At: ev.At, Actor: ev.Actor}
}

// foldNodeEvents records what evs did to each node.
func foldNodeEvents(evs []Decoded, node func(string) *NodeDiff) {
	for _, e := range evs {
		m := markOf(e.Event)
		switch v := e.Payload.(type) {
		case events.NodeRegistered:
			node(v.Node).Registered = &m
		case events.NodeRemoved:
			node(v.Node).Removed = &m
		case events.NodeAdopted:
			node(v.Node).Adopted = &m
		case events.ModuleAssigned:
			n := node(v.Node)
			n.Modules = append(n.Modules, ModuleEvent{EventMark: m, Type: e.Event.Type, Module: v.Module})
		case events.ModuleTaken:
			n := node(v.Node)
			n.Modules = append(n.Modules, ModuleEvent{EventMark: m, Type: e.Event.Type, Module: v.Module})
		case events.ModuleReleased:
			n := node(v.Node)
			n.Modules = append(n.Modules, ModuleEvent{EventMark: m, Type: e.Event.Type, Module: v.Module})
		case events.DeclarationComposed:
			if name := nodeOf(e.Event, v); name != "" {
				node(name).Composed++
			}
		}
	}
}

// foldModuleEvents records what evs did to each module, each definition
// against the one before it (before: at the diff's start).
func foldModuleEvents(evs []Decoded, before map[string]events.ModuleSpec) map[string]*ModuleDiff {
	specs := maps.Clone(before)
	if specs == nil {
		specs = map[string]events.ModuleSpec{}
	}
	out := map[string]*ModuleDiff{}
	module := func(name string) *ModuleDiff {
		m, ok := out[name]
		if !ok {
			m = &ModuleDiff{Module: name}
			out[name] = m
		}
		return m
	}
	for _, e := range evs {
		m := markOf(e.Event)
		switch v := e.Payload.(type) {
		case events.ModuleDefined:
			def := Definition{EventMark: m}
			if prev, ok := specs[v.Module]; ok {
				def.Fields = SpecFields(prev, v.Spec)
			} else {
				def.New = true
			}
			specs[v.Module] = v.Spec
			md := module(v.Module)
			md.Definitions = append(md.Definitions, def)
		case events.ModuleRemoved:
			delete(specs, v.Module)
			module(v.Module).Removed = &m
		case events.ArtifactRecorded:
			md := module(v.Module)
			md.Builds = append(md.Builds, BuildMark{EventMark: m, Name: v.Name, Digest: v.Digest})
		case events.ModuleDeployed:
			md := module(v.Module)
			md.Deploys = append(md.Deploys, DeployMark{EventMark: m, By: v.By, Builds: v.Builds})
		}
	}
	return out
}

// compareNode sets on n what differs between a node's two ends (a zero
// NodeEnd: the node was not there); from is the diff's start position.
func compareNode(n *NodeDiff, a, b NodeEnd, from uint64) {
	if a.Sync != b.Sync {
		n.Sync = &Change{a.Sync, b.Sync}
	}
	if a.Health != b.Health {
		n.Health = &Change{a.Health, b.Health}
	}
	if a.Declaration != b.Declaration {
		n.Decl = &Change{a.Declaration, b.Declaration}
	}
	n.RosterAdded, n.RosterRemoved = diffNames(a.Roster, b.Roster)
	n.ResourcesAdded, n.ResourcesRemoved, n.ResourcesChanged = diffResources(a.Resources, b.Resources)
	n.HoldsAppeared, n.HoldsCleared = diffHolds(a.Holds, b.Holds)
	for _, e := range b.Episodes {
		if e.Detected.Position > from {
			n.ChurnOpened = append(n.ChurnOpened, e)
		}
		if e.End != nil && e.End.Position > from {
			n.ChurnClosed = append(n.ChurnClosed, e)
		}
	}
}

// empty reports whether nothing changed on n.
func (n *NodeDiff) empty() bool {
	return n.Registered == nil && n.Removed == nil && n.Adopted == nil && len(n.Modules) == 0 &&
		n.Sync == nil && n.Health == nil && n.Composed == 0 && n.Decl == nil &&
		len(n.RosterAdded)+len(n.RosterRemoved) == 0 &&
		len(n.ResourcesAdded)+len(n.ResourcesRemoved)+len(n.ResourcesChanged) == 0 &&
		len(n.HoldsAppeared)+len(n.HoldsCleared) == 0 &&
		len(n.ChurnOpened)+len(n.ChurnClosed) == 0
}

// diffResources compares two declarations' resources by name: those only
// in b (added), only in a (removed), and in both with another digest
// (changed), each sorted by name. A name declared twice counts once, its
// last.
func diffResources(a, b []events.ResourceRef) (added, removed []events.ResourceRef, changed []ResourceChange) {
	ia, ib := refsByName(a), refsByName(b)
	for _, name := range slices.Sorted(maps.Keys(ib)) {
		rb := ib[name]
		ra, ok := ia[name]
		switch {
		case !ok:
			added = append(added, rb)
		case ra.Digest != rb.Digest:
			changed = append(changed, ResourceChange{Name: name, Kind: rb.Kind, Module: rb.Module, From: ra.Digest, To: rb.Digest})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ia)) {
		if _, ok := ib[name]; !ok {
			removed = append(removed, ia[name])
		}
	}
	return added, removed, changed
}

func refsByName(rs []events.ResourceRef) map[string]events.ResourceRef {
	m := make(map[string]events.ResourceRef, len(rs))
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

// diffHolds compares two hold lists by resource, module and reason: the
// holds only in b (appeared) and only in a (cleared), in b's and a's
// order (module, then name).
func diffHolds(a, b []Hold) (appeared, cleared []Hold) {
	key := func(h Hold) events.Held { return events.Held{Name: h.Name, Module: h.Module, Reason: h.Reason} }
	in := func(hs []Hold) map[events.Held]bool {
		m := make(map[events.Held]bool, len(hs))
		for _, h := range hs {
			m[key(h)] = true
		}
		return m
	}
	ia, ib := in(a), in(b)
	for _, h := range b {
		if !ia[key(h)] {
			appeared = append(appeared, h)
		}
	}
	for _, h := range a {
		if !ib[key(h)] {
			cleared = append(cleared, h)
		}
	}
	return appeared, cleared
}

// SpecFields names the fields of a module spec that differ from a to b:
// its top-level fields by their JSON names ("routes", "upgrade"), and a
// container's, directory's or file's by its name and field
// ("containers[web].env", "containers[web]" when one side lacks it).
func SpecFields(a, b events.ModuleSpec) []string {
	var out []string
	out = append(out, named("containers", a.Containers, b.Containers, func(c events.ContainerSpec) string { return c.Name })...)
	out = append(out, named("directories", a.Directories, b.Directories, func(d events.DirectorySpec) string { return d.Path })...)
	out = append(out, named("files", a.Files, b.Files, func(f events.FileSpec) string { return f.Path })...)
	ja, jb := fieldsOf(a), fieldsOf(b)
	for _, k := range slices.Sorted(maps.Keys(keys(ja, jb))) {
		if k == "containers" || k == "directories" || k == "files" {
			continue
		}
		if string(ja[k]) != string(jb[k]) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// named compares two lists of named items: each name only in one
// ("field[name]") and each field of an item in both that differs
// ("field[name].sub").
func named[T any](field string, a, b []T, name func(T) string) []string {
	ia, ib := map[string]T{}, map[string]T{}
	for _, x := range a {
		ia[name(x)] = x
	}
	for _, x := range b {
		ib[name(x)] = x
	}
	var out []string
	for n := range keys(ia, ib) {
		xa, oka := ia[n]
		xb, okb := ib[n]
		if !oka || !okb {
			out = append(out, field+"["+n+"]")
			continue
		}
		fa, fb := fieldsOf(xa), fieldsOf(xb)
		for k := range keys(fa, fb) {
			if string(fa[k]) != string(fb[k]) {
				out = append(out, field+"["+n+"]."+k)
			}
		}
	}
	return out
}

// fieldsOf is v's JSON object, field by field (nil if v is not one).
func fieldsOf(v any) map[string]json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
