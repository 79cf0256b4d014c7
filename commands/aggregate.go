package commands

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// Node is the node aggregate's state, folded from its stream by EvolveNode.
// A Node is a value: EvolveNode never modifies the maps of the state it is
// given, it copies them when it changes them.
type Node struct {
	Name       string
	Registered bool
	// Removed says the node's latest node.removed is after its latest
	// node.registered (Registered is then false).
	Removed  bool
	Adopted  bool
	Settings map[string]string // node.setting-set keys (events.Setting*) to values
	Assigned map[string]bool   // modules assigned to the node
	Taken    map[string]bool   // modules taken on the node (adopted nodes)
	Composed uint64            // declarations composed so far; the next is Composed+1
	Declared map[string]string // resource name → digest, of the last composed declaration
	// Carried is the node's last declaration.composed that carried its
	// resources (not by reference): what the next one refers to when its
	// resources are the same (Composition.Stored).
	Carried Carried
	Current Current // the last composed declaration
	Version uint64  // the stream version this state reflects
	// Applies are the node's last apply reports, by apply id and version:
	// what RecordApply reads back to tell a report delivered again from
	// another one under a used apply id.
	Applies RecentApplies
	// Access is the node's join tokens and bus users.
	Access Access
	// Liveness is what the node's last node.went-silent or node.came-back
	// says.
	Liveness Liveness
	// Heard says the node's stream holds something the node said since it
	// was last registered: an apply report (recorded, refused, throttled
	// or delivered late), or a liveness transition naming a heartbeat. A
	// node never heard is not silent: its agent has not started yet
	// (RecordWentSilent).
	Heard bool
}

// Liveness is a node's last liveness transition: Silent after a
// node.went-silent (SilentSince its last heartbeat before, or the event's
// time when it named none), not after a node.came-back or before either.
type Liveness struct {
	Silent      bool
	SilentSince time.Time
}

// recentApplies is how many of a node's last apply reports RecentApplies
// keeps. A report comes again (its acknowledgement lost, the controller
// stopped between append and acknowledgement) while at most a few of the
// node's later reports were recorded: an agent delivers its reports in
// order and stops at the first that fails.
const recentApplies = 16

// RecentApplies keeps a node's last recentApplies apply.reported events,
// each by id and stream version. It is an array, not a slice, so that a
// Node stays a value: EvolveNode returns a copy, and the state it was given
// is unchanged.
type RecentApplies struct {
	ids      [recentApplies]uuid.UUID
	versions [recentApplies]uint64
	next     int // where the next one goes
}

// with returns r with the apply id recorded at version added, the oldest
// forgotten when it is full.
func (r RecentApplies) with(id uuid.UUID, version uint64) RecentApplies {
	r.ids[r.next], r.versions[r.next] = id, version
	r.next = (r.next + 1) % recentApplies
	return r
}

// Version returns the stream version of the recent apply.reported whose
// id is id, or 0 when none of the recent ones is.
func (r RecentApplies) Version(id uuid.UUID) uint64 {
	for i, x := range r.ids {
		if x == id && id != uuid.Nil {
			return r.versions[i]
		}
	}
	return 0
}

// Carried is a declaration.composed that carried its resources: its event
// id and its list (shared with the payload: never modified).
type Carried struct {
	ID        uuid.UUID // uuid.Nil: none
	Resources []events.ResourceRef
}

// names reports whether id (a resources_since) names c.
func (c Carried) names(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && c.ID != uuid.Nil && u == c.ID
}

// Current is what a node's state keeps of its last composed declaration, so
// that a compose that changes nothing appends nothing (see Push).
type Current struct {
	ID          string // "novox/3"; "" when none, or when its payload did not decode
	Digest      string
	Correlation string // of its compose
	Notes       string // its warnings and skipped nodes, as compared (notes)
	// Pushed says the node's last push record (declaration.pushed or
	// declaration.push-failed) is a declaration.pushed after this compose.
	// Push records pushes of the current declaration only, so the type is
	// enough.
	Pushed bool
}

// Module is the module aggregate's state, folded from its stream by
// EvolveModule. Like Node, it is a value.
type Module struct {
	Name    string
	Defined bool
	// Removed says the module's latest module.removed is after its latest
	// module.defined (Defined is then false, and its builds forgotten).
	Removed   bool
	Spec      events.ModuleSpec
	Artifacts map[string]string // artifact name → digest of its latest recorded build
	// Deployed maps an artifact name to the digest of the build compose
	// runs: the last one deployed (module.deployed), or, for a build
	// recorded before upgrade policies (events.ArtifactRecorded), the last
	// one recorded.
	Deployed map[string]string
	// Builds maps the digest of every build ever recorded to its artifact
	// name, for mesh deploy --digest.
	Builds map[string]string
	// Recorded is every build recorded, in the order first recorded.
	Recorded []events.Build
	Version  uint64
}

// Upgrade returns the module's upgrade policy: events.UpgradeManual unless
// its spec says events.UpgradeRollOut.
func (m Module) Upgrade() string {
	if m.Spec.Upgrade == events.UpgradeRollOut {
		return events.UpgradeRollOut
	}
	return events.UpgradeManual
}

// Pending returns the builds recorded but not deployed: every artifact whose
// latest recorded build is not the one compose runs, sorted by name.
func (m Module) Pending() []events.Build {
	var out []events.Build
	for _, name := range slices.Sorted(maps.Keys(m.Artifacts)) {
		if d := m.Artifacts[name]; m.Deployed[name] != d {
			out = append(out, events.Build{Name: name, Digest: d})
		}
	}
	return out
}

// AssignedModules returns the modules assigned to n, sorted.
func (n Node) AssignedModules() []string { return sortedKeys(n.Assigned) }

// TakenModules returns the modules taken on n, sorted.
func (n Node) TakenModules() []string { return sortedKeys(n.Taken) }

// Port returns the port the node was given under name ("" if none).
func (n Node) Port(name string) string { return n.Settings[events.SettingPortPrefix+name] }

// PrivateAddress returns the node's private address ("" if none yet).
func (n Node) PrivateAddress() string { return n.Settings[events.SettingPrivateAddress] }

// ArtifactStorePort returns the port on which the node holds the artifact
// store, "" when it holds none.
func (n Node) ArtifactStorePort() string { return n.Settings[events.SettingArtifactStore] }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// EvolveNode folds one event of a node's stream into s. Events of types the
// node does not track (pushed, apply.reported, ...) only advance its version,
// counters and marks, by type; their payload may be nil.
func EvolveNode(s Node, ev events.Event, p events.Payload) Node {
	s.Version = ev.Version
	switch p := p.(type) {
	case events.NodeRegistered:
		s.Name, s.Registered, s.Removed = p.Node, true, false
	case events.NodeRemoved:
		s = forgetNode(s)
	case events.NodeAdopted:
		s.Adopted = true
	case events.NodeSettingSet:
		s.Settings = withString(s.Settings, p.Key, p.Value)
	case events.ModuleAssigned:
		s.Assigned = withBool(s.Assigned, p.Module, true)
	case events.ModuleReleased:
		s.Assigned = withBool(s.Assigned, p.Module, false)
		s.Taken = withBool(s.Taken, p.Module, false)
	case events.ModuleTaken:
		s.Taken = withBool(s.Taken, p.Module, true)
	case events.DeclarationComposed:
		switch {
		case !p.ByReference():
			declared := make(map[string]string, len(p.Resources))
			for _, r := range p.Resources {
				declared[r.Name] = r.Digest
			}
			s.Declared = declared
			s.Carried = Carried{ID: ev.ID, Resources: p.Resources}
		case !s.Carried.names(p.ResourcesSince):
			// A reference to what the stream did not carry last (a damaged or
			// forged history): the resources are unknown, so the next
			// compose carries them, every spec with them.
			s.Declared, s.Carried = nil, Carried{}
		}
		s.Current = Current{ID: p.Declaration, Digest: p.Digest, Correlation: ev.Correlation, Notes: notes(p.Warnings, p.Skipped)}
	case events.NodeJoinTokenIssued, events.NodeJoined, events.NodeCredentialsIssued, events.NodeCredentialsRevoked:
		s.Access = evolveAccess(s.Access, p, ev.At)
	case events.NodeWentSilent:
		since := p.LastSeen
		if since.IsZero() {
			since = ev.At
		}
		s.Liveness = Liveness{Silent: true, SilentSince: since}
		s.Heard = s.Heard || !p.LastSeen.IsZero()
	case events.NodeCameBack:
		s.Liveness = Liveness{}
		s.Heard = true
	}
	switch ev.Type {
	case events.TypeDeclarationComposed:
		s.Composed++ // counted by type, so that a payload this build cannot decode still counts
		if p == nil {
			s.Current = Current{} // unknown: the next compose appends afresh
		}
	case events.TypeDeclarationComposeFailed:
		// The node's latest compose failed: its health is failing until a
		// compose succeeds (projections.HealthFailing), so the next compose
		// that succeeds is recorded, even if it is byte-identical to the
		// declaration before the failure.
		s.Current = Current{}
	case events.TypeDeclarationPushed:
		s.Current.Pushed = true
	case events.TypeDeclarationPushFailed:
		s.Current.Pushed = false
	case events.TypeApplyReported:
		s.Applies = s.Applies.with(ev.ID, ev.Version) // the envelope's: no payload decoded
		s.Heard = true
	case events.TypeReportRefused, events.TypeReportThrottled, events.TypeReportDeliveredLate:
		s.Heard = true // by type: the node said something, whatever it was
	}
	return s
}

// nodeDecodes reports whether EvolveNode needs the payload of an event of
// type typ; the node stream is mostly composes, pushes and applies, which it
// only counts (of a composed declaration it keeps the resource digests).
func nodeDecodes(typ string) bool {
	switch typ {
	case events.TypeNodeRegistered, events.TypeNodeAdopted, events.TypeNodeSettingSet,
		events.TypeModuleAssigned, events.TypeModuleReleased, events.TypeModuleTaken,
		events.TypeDeclarationComposed, events.TypeNodeJoinTokenIssued, events.TypeNodeJoined,
		events.TypeNodeCredentialsIssued, events.TypeNodeCredentialsRevoked,
		events.TypeNodeWentSilent, events.TypeNodeCameBack, events.TypeNodeRemoved:
		return true
	}
	return false
}

// moduleDecodes is nodeDecodes for EvolveModule.
func moduleDecodes(typ string) bool {
	switch typ {
	case events.TypeModuleDefined, events.TypeArtifactRecorded, events.TypeModuleDeployed, events.TypeModuleRemoved:
		return true
	}
	return false
}

// EvolveModule folds one event of a module's stream into s.
func EvolveModule(s Module, ev events.Event, p events.Payload) Module {
	s.Version = ev.Version
	switch p := p.(type) {
	case events.ModuleDefined:
		s.Name, s.Defined, s.Removed, s.Spec = p.Module, true, false, p.Spec
	case events.ArtifactRecorded:
		s.Recorded = withBuild(s.Recorded, events.Build{Name: p.Name, Digest: p.Digest})
	case events.ModuleRemoved:
		s = Module{Name: s.Name, Removed: true, Version: s.Version}
	}
	switch p := p.(type) {
	case events.ArtifactRecorded:
		s.Artifacts = withString(s.Artifacts, p.Name, p.Digest)
		s.Builds = withString(s.Builds, p.Digest, p.Name)
		if p.Upgrade == "" {
			// Recorded before upgrade policies: a build was a deployment.
			s.Deployed = withString(s.Deployed, p.Name, p.Digest)
		}
	case events.ModuleDeployed:
		for _, b := range p.Builds {
			s.Deployed = withString(s.Deployed, b.Name, b.Digest)
		}
	}
	return s
}

func withBuild(bs []events.Build, b events.Build) []events.Build {
	if slices.Contains(bs, b) {
		return bs
	}
	return append(slices.Clip(bs), b)
}

func withString(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func withBool(m map[string]bool, k string, v bool) map[string]bool {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]bool{}
	}
	if v {
		out[k] = true
	} else {
		delete(out, k)
	}
	return out
}

// badName is what events.CheckName, the one rule for names, finds wrong
// with name: the name, quoted short, and the rule it breaks; "" when
// nothing. It is for messages that say already what the name is of.
func badName(what, name string) string {
	err := events.CheckName(what, name)
	if err == nil {
		return ""
	}
	var ne *events.NameError
	if errors.As(err, &ne) {
		return quote(name) + ": " + ne.Rule
	}
	return err.Error()
}

// CheckArtifact checks an artifact's name: segments joined by '/', each a
// name (events.CheckName), as the image reference composed from it needs
// ("forge/web").
func CheckArtifact(s string) error {
	if s == "" {
		return errors.New("artifact name is empty")
	}
	for _, seg := range strings.Split(s, "/") {
		if bad := badName("artifact", seg); bad != "" {
			return fmt.Errorf("artifact name %s: segment %s", quote(s), bad)
		}
	}
	return nil
}

// notes is the form in which compose compares a declaration's warnings and
// skipped nodes with the current declaration's: a compose whose digest is the
// same but whose notes differ is recorded, so rule 1's record of passed-over
// nodes is never lost.
func notes(warnings []string, skipped []events.Skipped) string {
	var b strings.Builder
	for _, w := range warnings {
		b.WriteString(w)
		b.WriteByte(0)
	}
	b.WriteByte(1)
	for _, k := range skipped {
		b.WriteString(k.Node)
		b.WriteByte(0)
		b.WriteString(k.Reason)
		b.WriteByte(0)
	}
	return b.String()
}
