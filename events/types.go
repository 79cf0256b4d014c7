package events

import (
	"encoding/json"
	"time"
)

// Event types. They are a persisted API: add, never rename or reorder.
// Streams: node events on "node-<name>" (NodeStream), module and artifact
// events on "module-<name>" (ModuleStream).
const (
	TypeNodeRegistered           = "node.registered"
	TypeNodeAdopted              = "node.adopted"
	TypeNodeSettingSet           = "node.setting-set"
	TypeModuleDefined            = "module.defined"
	TypeModuleAssigned           = "module.assigned"
	TypeModuleReleased           = "module.released"
	TypeModuleTaken              = "module.taken"
	TypeArtifactRecorded         = "artifact.recorded"
	TypeDeclarationComposed      = "declaration.composed"
	TypeDeclarationComposeFailed = "declaration.compose-failed"
	TypeDeclarationPushed        = "declaration.pushed"
	TypeDeclarationPushFailed    = "declaration.push-failed"
	TypeApplyReported            = "apply.reported"
	TypeReportDeliveredLate      = "report.delivered-late"
	TypeModuleDeployed           = "module.deployed"
	TypeReportRefused            = "report.refused"
	TypeReportThrottled          = "report.throttled"
	TypeNodeJoinTokenIssued      = "node.join-token-issued"
	TypeNodeJoined               = "node.joined"
	TypeNodeCredentialsIssued    = "node.credentials-issued"
	TypeNodeCredentialsRevoked   = "node.credentials-revoked"
	TypeTokenCreated             = "token.created"
	TypeTokenRevoked             = "token.revoked"
	TypeNodeWentSilent           = "node.went-silent"
	TypeNodeCameBack             = "node.came-back"
	TypeModuleRemoved            = "module.removed"
	TypeNodeRemoved              = "node.removed"
	TypeSecretSet                = "secret.set"
	TypeRosterChanged            = "roster.changed"
	// The container state events are in container.go.
)

// NodeStream is the stream of a node's events.
func NodeStream(node string) string { return "node-" + node }

// ModuleStream is the stream of a module's events.
func ModuleStream(module string) string { return "module-" + module }

// SecretStream is the stream of a secret's values (secret.set):
// "secret-<name>".
func SecretStream(name string) string { return "secret-" + name }

// RosterStream is the stream of the mesh's roster (roster.changed): its
// version is the roster's revision.
const RosterStream = "mesh-roster"

// TokenStream is the stream of an operator's API tokens (token.created,
// token.revoked): "token-<name>".
func TokenStream(name string) string { return "token-" + name }

// Payload is implemented by every event payload: it names its type.
type Payload interface{ EventType() string }

// Node settings, the keys of node.setting-set.
const (
	SettingPrivateAddress = "private-address" // the node's address on the private network
	SettingArtifactStore  = "artifact-store"  // the port on which this node holds the artifact store
	SettingPortPrefix     = "port."           // "port.store": a port the node was given
)

// NodeRegistered: a node joined the mesh.
type NodeRegistered struct {
	Node string `json:"node"`
}

// NodeAdopted: the node existed before the mesh and may hold modules' data;
// its modules must be taken before their found data is used.
type NodeAdopted struct {
	Node string `json:"node"`
}

// NodeSettingSet: a node setting was given a value ("" clears it).
type NodeSettingSet struct {
	Node  string `json:"node"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ModuleDefined: a module's definition, whole; a later one replaces it.
type ModuleDefined struct {
	Module string     `json:"module"`
	Spec   ModuleSpec `json:"spec"`
}

// ModuleSpec is what a module file says.
type ModuleSpec struct {
	Routes      []string        `json:"routes,omitempty"`
	Containers  []ContainerSpec `json:"containers,omitempty"`
	Directories []DirectorySpec `json:"directories,omitempty"`
	Files       []FileSpec      `json:"files,omitempty"`
	Volumes     []string        `json:"volumes,omitempty"`
	Networks    []string        `json:"networks,omitempty"`
	// Upgrade is the module's upgrade policy: UpgradeManual (also when
	// empty) or UpgradeRollOut.
	Upgrade string `json:"upgrade,omitempty"`
	// Update is the module's update block (update.go); nil when it has
	// none.
	Update *UpdatePolicy `json:"update,omitempty"`
}

// ContainerSpec is one container of a module. Exactly one of Image and
// Artifact names what it runs.
type ContainerSpec struct {
	Name     string            `json:"name"`
	Image    string            `json:"image,omitempty"`
	Artifact string            `json:"artifact,omitempty"` // "forge/web": a recorded build of this module
	Command  []string          `json:"command,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Mounts   []Mount           `json:"mounts,omitempty"`
	Ports    []PortRead        `json:"ports,omitempty"` // node settings read into the environment
	Networks []string          `json:"networks,omitempty"`
	// Added fields.
	Secrets map[string]SecretRef `json:"secrets,omitempty"` // env variable → the secret it holds
	// How it is checked, published and restarted (compose's keys, in
	// compose's words; durations as compose writes them, "30s", "1m30s").
	Healthcheck     *Healthcheck `json:"healthcheck,omitempty"`
	Network         string       `json:"network,omitempty"` // "host": the node's own network
	Publish         []Publish    `json:"publish,omitempty"`
	Restart         string       `json:"restart,omitempty"` // always, on-failure, no; "" is the agent's default
	StopGracePeriod string       `json:"stop_grace_period,omitempty"`
	Memory          string       `json:"memory,omitempty"` // "512m", "1g", bytes
	CPUs            string       `json:"cpus,omitempty"`   // "0.5"
	Entrypoint      []string     `json:"entrypoint,omitempty"`
	User            string       `json:"user,omitempty"`
	CapAdd          []string     `json:"cap_add,omitempty"`
	Tmpfs           []string     `json:"tmpfs,omitempty"` // container paths
	ReadOnly        bool         `json:"read_only,omitempty"`
	DependsOn       []Dependency `json:"depends_on,omitempty"`
}

// Healthcheck is a container's health check, compose's healthcheck: the
// engine runs Test ([CMD, ...], [CMD-SHELL, "..."] or [NONE], which
// disables the image's own).
type Healthcheck struct {
	Test        []string `json:"test"`
	Interval    string   `json:"interval,omitempty"`
	Timeout     string   `json:"timeout,omitempty"`
	Retries     int      `json:"retries,omitempty"`
	StartPeriod string   `json:"start_period,omitempty"`
}

// Publish publishes a container port on the node: the host port is the
// node's setting "port.<Port>", read at compose time (rule 6), bound to the
// node's private address unless On is "all" (every address).
type Publish struct {
	Port      string `json:"port"`
	Container int    `json:"container"`
	On        string `json:"on,omitempty"` // "" (the private address) or "all"
}

// Dependency is compose's depends_on entry: Container (of the same module)
// is started before this one and, with Condition service_healthy, is
// healthy first.
type Dependency struct {
	Container string `json:"container"`
	Condition string `json:"condition,omitempty"` // service_started (the default) or service_healthy
}

// SecretRef is an environment variable whose value is a secret of the
// controller's secret store: only its name and the keyed digest of the
// value it had when the module was (re)defined are event data, never the
// value (see package secrets).
//
//	{"secret": "forge-db", "digest": "hmac-sha256:…"}
type SecretRef struct {
	Secret string `json:"secret"`
	Digest string `json:"digest,omitempty"`
}

// Mount mounts a host path (or a volume, when Volume is set) into a container.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target,omitempty"` // defaults to Source
	Volume   bool   `json:"volume,omitempty"`
	ReadOnly bool   `json:"readonly,omitempty"`
}

// PortRead asks the node for one of its ports and hands it to the container
// as an environment variable, resolved at compose time.
type PortRead struct {
	Port string `json:"port"` // the node setting "port.<Port>"
	Env  string `json:"env"`
}

// DirectorySpec is a directory a module owns (each mounted path is one too).
type DirectorySpec struct {
	Path string `json:"path"`
	Mode string `json:"mode,omitempty"` // octal, "0755" when empty
}

// FileSpec is a file a module owns, written in place.
type FileSpec struct {
	Path    string `json:"path"`
	Mode    string `json:"mode,omitempty"` // octal, "0644" when empty
	Content string `json:"content"`
}

// ModuleAssigned: the module is to run on the node.
type ModuleAssigned struct {
	Module string `json:"module"`
	Node   string `json:"node"`
}

// ModuleReleased: the module is no longer to run on the node.
type ModuleReleased struct {
	Module string `json:"module"`
	Node   string `json:"node"`
}

// ModuleTaken: on an adopted node, the operator says the module's found data
// is the mesh's to use.
type ModuleTaken struct {
	Module string `json:"module"`
	Node   string `json:"node"`
}

// ArtifactRecorded: a build of one of the module's artifacts. It names the
// artifact, never an address: image references are composed per declaration.
//
// A build is not a deployment (seed 002, its issue 126): compose runs the
// build a module was last deployed with (module.deployed). Upgrade is the
// module's upgrade policy when the build was recorded; a build recorded
// before policies existed has none, and was a deployment as it was recorded
// (so an old history composes as it always did).
type ArtifactRecorded struct {
	Module string `json:"module"`
	Name   string `json:"name"`   // "forge/web"
	Digest string `json:"digest"` // "sha256:ab12"
	// Added fields.
	Upgrade string `json:"upgrade,omitempty"` // UpgradeManual or UpgradeRollOut; "" in builds recorded before policies
}

// Upgrade policies of a module (ModuleSpec.Upgrade, ArtifactRecorded.Upgrade).
const (
	UpgradeManual  = "manual"   // a recorded build waits for mesh deploy (the default)
	UpgradeRollOut = "roll-out" // a recorded build is deployed as it is recorded
)

// ModuleDeployed (public payload, on stream "module-<name>"): from now on,
// compose runs these builds of the module's artifacts. Builds lists each
// artifact deployed, by name, with the digest of its recorded build; By says
// what deployed them.
//
//	{"module": "forge", "builds": [{"name": "forge/web", "digest": "sha256:…"}], "by": "operator"}
//
// By is DeployedByOperator (mesh deploy), DeployedByRollOut (the module's
// upgrade policy deployed the build as it was recorded: the event follows
// that artifact.recorded, under its correlation), DeployedByFirstBuild
// (the first recorded build of an artifact deploys itself, whatever the
// policy) or DeployedByRevert (mesh revert). Fields may be added, never removed or renamed.
type ModuleDeployed struct {
	Module string  `json:"module"`
	Builds []Build `json:"builds"`
	By     string  `json:"by"`
}

// Build names one recorded build of an artifact.
type Build struct {
	Name   string `json:"name"`   // "forge/web"
	Digest string `json:"digest"` // "sha256:ab12"
}

// What deployed a module's builds (ModuleDeployed.By).
const (
	DeployedByOperator   = "operator"
	DeployedByRollOut    = "roll-out"
	DeployedByFirstBuild = "first-build"
	// DeployedByRevert: mesh revert ran again the builds a module ran at a
	// moment; the event's causation names the revert ("revert forge --to
	// 41"), and a module.defined before it, under its correlation, the
	// definition then when it differed.
	DeployedByRevert = "revert"
)

// DeclarationComposed (public payload): the controller composed a node's
// declaration.
type DeclarationComposed struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration"`
	Digest      string `json:"digest"`
	// RosterRevision names the roster (roster.changed on RosterStream)
	// the declaration was composed against. The stored form then leaves
	// Roster out; every surface that hands events out gives it in full
	// (Public, RosterBook). A declaration recorded before the roster had
	// revisions has none, and its Roster as stored.
	RosterRevision uint64   `json:"roster_revision,omitempty"`
	Roster         []string `json:"roster,omitempty"`
	// Resources is the declaration's resources. A declaration whose
	// resources are those of its node's last declaration that carried them
	// (a roster-only change) is stored by reference: ResourcesSince, the id
	// of that declaration.composed, in place of Resources (the stored form
	// leaves the key out: omitzero keeps an empty list, [], as given).
	// Every surface that hands events out gives them in full beside
	// ResourcesSince (Public, ResourceBook); a reader that cannot resolve
	// the reference (a damaged or forged history) reads Resources as
	// unknown (nil) and says why in ResourcesUnknown.
	Resources      []ResourceRef `json:"resources,omitzero"`
	ResourcesSince string        `json:"resources_since,omitempty"`
	// ResourcesUnknown is a reader's note, never stored by the controller:
	// why the resources ResourcesSince names could not be resolved.
	ResourcesUnknown string `json:"resources_unknown,omitempty"`
	// Added fields.
	Warnings []string  `json:"warnings,omitempty"` // unfilled port requests, ...
	Skipped  []Skipped `json:"skipped,omitempty"`  // nodes passed over as incoherent
	// Specs holds the spec (JSON) of every resource digest that the node's
	// previous declaration did not have, by digest: every spec a node was
	// ever declared stands once in its stream, and a declaration that
	// changes nothing carries none.
	Specs map[string]json.RawMessage `json:"specs,omitempty"`
}

// ResourceRef names a declared resource and its spec digest.
type ResourceRef struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Module string `json:"module"`
	Digest string `json:"digest"`
}

// Skipped records a node that a gatherer passed over because its plan is
// incoherent (its module set does not compose, or a setting reaches nothing).
type Skipped struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// DeclarationComposeFailed: composing a node's declaration failed; nothing
// was pushed.
type DeclarationComposeFailed struct {
	Node  string `json:"node"`
	Read  string `json:"read,omitempty"` // what could not be read ("node g14")
	Error string `json:"error"`
}

// DeclarationPushed: the declaration was handed to the bus for the node.
//
// A push of a declaration whose compose changed nothing (the same digest as
// the node's current declaration: no new declaration.composed) re-sends the
// stored declaration, under its id and its compose's correlation, and is
// recorded only when it changes what the stream says: the first successful
// push of that declaration, or the first after a declaration.push-failed. An
// idle pass (the same declaration, pushed before, nothing failed since) adds
// no declaration.pushed; a failed send is always recorded
// (declaration.push-failed).
type DeclarationPushed struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration"`
	Digest      string `json:"digest"`
	Resources   int    `json:"resources"`
}

// DeclarationPushFailed: the declaration could not be handed to the bus.
type DeclarationPushFailed struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration"`
	Error       string `json:"error"`
}

// ApplyReported (public payload): one apply of a declaration on a node.
// Sent and Applied count resources; every resource that was not unchanged is
// listed with its reason. There is one apply.reported per apply, quiet ones
// included (rule 7 counts quiet passes, rule 3 wants the hold line in every
// report); a quiet one is compact:
//
//   - An empty list is left out: a reader takes an absent created, replaced,
//     removed, held, failed or updated for an empty list (reports recorded
//     before this form carry them as []).
//   - HeldSince: a held list equal to the one an earlier report of the same
//     node carried in full is left out, and HeldSince names that report by
//     its apply id. The named report is always one that carried the list
//     itself (never another HeldSince), and comes earlier in the node's
//     stream, since an agent delivers its reports in apply order.
//   - Digest is left out when the previous report of the node was of the
//     same declaration (it carried the digest, or the declaration's
//     declaration.composed does).
//   - ApplyID is left out of the stored payload: it is the event's own id
//     (commands.RecordApply appends the report under the apply id). Reports
//     recorded before carry it too.
//
// ReceivedAt (an added field, "received_at") is when the controller took the
// report, by the controller's clock, beside the agent's own time of the apply
// (the envelope's at): the controller's door accepts an apply time from the
// time its declaration was composed, less MaxReportSkew, to the controller's
// clock plus MaxReportSkew, so a report delivered days late from an outbox
// is recorded with both. It is the controller's, never the agent's: the door
// overwrites whatever the agent sent. Reports recorded before it, and those
// recorded by a simulation, have none.
//
// projections.Reports resolves a compact report back to the full one (Held
// from the named report, Digest, ApplyID from the envelope); every
// projection folds the resolved form, so compact and full records answer
// every query alike.
type ApplyReported struct {
	Node        string     `json:"node"`
	Declaration string     `json:"declaration"`
	Sent        int        `json:"sent"`
	Applied     int        `json:"applied"`
	Created     []string   `json:"created,omitempty"`
	Replaced    []Replaced `json:"replaced,omitempty"`
	Removed     []string   `json:"removed,omitempty"`
	Held        []Held     `json:"held,omitempty"`
	Failed      []Failed   `json:"failed,omitempty"`
	Unchanged   int        `json:"unchanged"`
	// Added fields.
	Updated []Replaced `json:"updated,omitempty"` // changed in place (a file's content, a directory's mode)
	ApplyID string     `json:"apply_id,omitempty"`
	Digest  string     `json:"digest,omitempty"` // the declaration's digest
	// HeldSince, when set, is the apply id of the earlier report of this
	// node whose held list this apply held again, unchanged; Held is then
	// empty in the stored form.
	HeldSince string `json:"held_since,omitempty"`
	// ReceivedAt is when the controller received the report (see above).
	ReceivedAt time.Time `json:"received_at,omitzero"`
}

// MaxReportSkew is how far an apply report's time (by the agent's clock)
// may be from what the controller's clock allows: at most this much after
// the controller's now, at least this much before the compose of the
// declaration it applied. It bounds a clock off by minutes, not a report
// delivered days late (which is after its compose all the same).
const MaxReportSkew = 5 * time.Minute

// Replaced names a resource and the spec fields that changed.
type Replaced struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
}

// Held names a resource the agent did not touch, and why.
type Held struct {
	Name   string `json:"name"`
	Module string `json:"module"`
	Reason string `json:"reason"`
}

// Failed names a resource whose apply failed.
type Failed struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// ReportDeliveredLate: an apply report reached the mesh after the agent had
// failed to deliver it at least once (it was kept in the agent's outbox).
type ReportDeliveredLate struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration"`
	ApplyID     string `json:"apply_id"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error,omitempty"`
}

// ReportRefused (on stream "node-<name>"): the controller refused, for good,
// a message that came on the node's report subject (mesh.report.<name>): it
// is not a report the controller can record. The message is acknowledged
// and terminated on the bus, never redelivered; this event keeps what it
// was, never its bytes:
//
//	{"node": "n1", "reason": "bad-counts", "detail": "unchanged: -1 is below zero: invalid input",
//	 "digest": "sha256:…", "size": 52, "apply_id": "0190…", "declaration": "n1/3"}
//
// Reason is one of the Refused* values (a fixed set: metrics label them);
// Detail is the door's sentence, at most MaxRefusalDetail bytes; Digest and
// Size are the SHA-256 and the length of the message's bytes; ApplyID and
// Declaration are what the message named, when it decoded that far (each
// at most MaxRefusalDetail bytes, else left out). The event's id derives
// from the node and the digest (commands.RefusalID), so the same bytes
// refused again append nothing.
type ReportRefused struct {
	Node        string `json:"node"`
	Reason      string `json:"reason"`
	Detail      string `json:"detail"`
	Digest      string `json:"digest"`
	Size        int    `json:"size"`
	ApplyID     string `json:"apply_id,omitempty"`
	Declaration string `json:"declaration,omitempty"`
}

// Reasons a report is refused (ReportRefused.Reason). The set is fixed; a
// reason is never renamed.
const (
	RefusedTooLarge    = "too-large"           // more bytes than the door takes (bus.MaxReportSize), or a name or message over its bound (ApplyReported.CheckForm)
	RefusedMalformed   = "malformed"           // does not decode (strictly), unknown version, no apply id or time, a held_since naming no held list, or the store refuses its form
	RefusedWrongNode   = "wrong-node"          // the report or its outcome names another node than its subject's
	RefusedCounts      = "bad-counts"          // the counts or resources disagree, in themselves (ApplyReported.CheckCounts) or with the declaration
	RefusedDecl        = "unknown-declaration" // not a declaration composed for the node, or one never pushed to it
	RefusedTime        = "bad-time"            // the apply time is outside the bound (MaxReportSkew)
	RefusedApplyID     = "apply-id-conflict"   // the apply id is stored with other content, or is another event's id
	RefusedUnknownNode = "unknown-node"        // the node is not registered (nothing is appended: it has no stream)
)

// RefusedReasons lists every refusal reason, in a new slice.
func RefusedReasons() []string {
	return []string{
		RefusedTooLarge, RefusedMalformed, RefusedWrongNode, RefusedCounts,
		RefusedDecl, RefusedTime, RefusedApplyID, RefusedUnknownNode,
	}
}

// MaxRefusalDetail bounds the text a ReportRefused keeps of a message.
const MaxRefusalDetail = 256

// ReportThrottled (on stream "node-<name>"): the node sent reports faster
// than the controller's per-node limit (Rate a second, bursts of Burst), and
// Deferred of them, from From to To, waited on the bus for their turn. None
// is lost: each is recorded in its turn. At most one a minute per node.
type ReportThrottled struct {
	Node     string    `json:"node"`
	Deferred uint64    `json:"deferred"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Rate     float64   `json:"rate"`
	Burst    int       `json:"burst"`
}

// NodeJoinTokenIssued (public payload, on stream "node-<name>"): an
// operator (By) asked for a one-time join token for the node, good until
// ExpiresAt. The token's secret is never stored: SecretSHA256 is the hex
// SHA-256 of its 32 bytes, TokenID the first 16 hex digits of it (what
// messages and node.joined name the token by). A join is checked against
// these alone, so any controller of the store can check it.
//
//	{"node": "n4", "token_id": "3f2a…", "secret_sha256": "3f2a…", "expires_at": "…", "by": "operator:ana"}
type NodeJoinTokenIssued struct {
	Node         string    `json:"node"`
	TokenID      string    `json:"token_id"`
	SecretSHA256 string    `json:"secret_sha256"`
	ExpiresAt    time.Time `json:"expires_at"`
	By           string    `json:"by"`
}

// NodeJoined (public payload, on stream "node-<name>"): a host redeemed
// the join token TokenID (once: a second redemption is refused) and was
// given a bus user for the node whose nkey is PublicKey (U..., public; the
// seed never left the host). From is the address the request came from,
// as the controller saw it; AgentVersion what the agent said it runs.
//
//	{"node": "n4", "token_id": "3f2a…", "public_key": "UD…", "from": "10.0.0.4:51234", "agent_version": "0.19.0"}
type NodeJoined struct {
	Node         string `json:"node"`
	TokenID      string `json:"token_id"`
	PublicKey    string `json:"public_key"`
	From         string `json:"from"`
	AgentVersion string `json:"agent_version,omitempty"`
}

// NodeCredentialsIssued (public payload, on stream "node-<name>"): the
// controller minted a whole credentials file for the node (`mesh node
// register NODE --creds FILE`), a user whose nkey is PublicKey; By asked.
// Recorded so that a revoke knows the key.
type NodeCredentialsIssued struct {
	Node      string `json:"node"`
	PublicKey string `json:"public_key"`
	By        string `json:"by"`
}

// NodeCredentialsRevoked (public payload, on stream "node-<name>"): By
// revoked every bus user of the node that history knows (PublicKeys, the
// users of its joins and issued credentials): they are in the mesh
// account's revocation list from then on, on every start too, so their
// connections are closed and refused. A new join token lets the host join
// again with a new key.
type NodeCredentialsRevoked struct {
	Node       string   `json:"node"`
	PublicKeys []string `json:"public_keys"`
	By         string   `json:"by"`
}

// NodeWentSilent (public payload, on stream "node-<name>"): the leading
// controller has heard no heartbeat from the node's agent for longer than
// Bound (`mesh up --silent-after`): status shows it unreachable from then
// on. LastSeen is the last heartbeat it heard, by the controller's clock;
// absent when it heard none since it started leading (it waits one bound
// after that before it says a node is silent). Only the transition is an
// event: a node silent for a year, or heard every few seconds for a year,
// adds nothing more.
//
//	{"node": "n1", "last_seen": "2026-12-02T10:00:00Z", "bound": "30s"}
//
// Bound is a Go duration. Fields may be added, never removed or renamed.
type NodeWentSilent struct {
	Node     string    `json:"node"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	Bound    string    `json:"bound"`
}

// NodeCameBack (public payload, on stream "node-<name>"): the leading
// controller heard a heartbeat from a node whose last liveness event is a
// node.went-silent. LastSeen is that heartbeat, by the controller's clock;
// SilentFor how long the node was silent, from its last heartbeat before
// the silence (the node.went-silent's at when it named none), a Go
// duration.
//
//	{"node": "n1", "last_seen": "2026-12-02T10:04:12Z", "silent_for": "4m12s"}
type NodeCameBack struct {
	Node      string    `json:"node"`
	LastSeen  time.Time `json:"last_seen"`
	SilentFor string    `json:"silent_for"`
}

func (NodeWentSilent) EventType() string { return TypeNodeWentSilent }
func (NodeCameBack) EventType() string   { return TypeNodeCameBack }

func (NodeJoinTokenIssued) EventType() string    { return TypeNodeJoinTokenIssued }
func (NodeJoined) EventType() string             { return TypeNodeJoined }
func (NodeCredentialsIssued) EventType() string  { return TypeNodeCredentialsIssued }
func (NodeCredentialsRevoked) EventType() string { return TypeNodeCredentialsRevoked }

// TokenCreated (on stream "token-<name>"): an API token was made for the
// operator Name. The secret itself is never event data (it is printed once,
// to who asked): the event keeps its SHA-256, so that any controller of the
// store can tell the token from history alone.
//
//	{"name": "alice", "token_id": "1a2b3c4d5e6f7a8b", "secret_sha256": "1a2b…(64 hex)",
//	 "expires_at": "2026-12-02T10:00:00Z", "by": "operator:admin"}
//
// TokenID is the first 16 hex digits of SecretSHA256 (what list and
// revoke show); ExpiresAt is absent for a token that does not expire; By is
// the actor who made it ("operator:NAME", or "controller" for the
// bootstrap token made at the controller's first start). Fields may be
// added, never removed or renamed.
type TokenCreated struct {
	Name         string    `json:"name"`
	TokenID      string    `json:"token_id"`
	SecretSHA256 string    `json:"secret_sha256"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
	By           string    `json:"by"`
}

// TokenRevoked (on stream "token-<name>"): the operator's token TokenID is
// refused from now on, by every controller of the store.
//
//	{"name": "alice", "token_id": "1a2b3c4d5e6f7a8b", "by": "operator:admin"}
type TokenRevoked struct {
	Name    string `json:"name"`
	TokenID string `json:"token_id"`
	By      string `json:"by"`
}

// ModuleRemoved (public payload, on stream "module-<name>"): the module
// left the mesh (mesh module remove), assigned to no node when it did. Its
// definition and builds are forgotten from then on; a later module.defined
// of the same name defines it anew, with no builds.
//
//	{"module": "forge"}
type ModuleRemoved struct {
	Module string `json:"module"`
}

// NodeRemoved (public payload, on stream "node-<name>"): the node left the
// mesh (mesh node remove), no module assigned to it when it did (a drain
// releases them first, in module.released events before it), its bus users
// revoked (a node.credentials-revoked before it, when it had any not
// revoked). Its registration, adoption, settings and unused join tokens
// are forgotten from then on; its history stays, and a later
// node.registered of the same name registers it anew. Drained says the
// removal released modules first.
//
//	{"node": "n4", "drained": ["forge"]}
type NodeRemoved struct {
	Node    string   `json:"node"`
	Drained []string `json:"drained,omitempty"`
}

// SecretSet (public payload, on stream "secret-<name>"): an operator (By)
// set the secret Name, the first time or again (a rotation). Digest is the
// keyed digest of the value (HMAC-SHA256 under a key derived from the
// secret store's key: a low-entropy password cannot be tried against it
// without that key); Sealed is the value encrypted with the store's key
// (AES-256-GCM, base64), KeyID names that key. The value itself is never
// event data. Modules whose env holds the secret are defined again, under
// the same correlation, with the new digest.
//
//	{"name": "forge-db", "digest": "hmac-sha256:…", "sealed": "…", "key_id": "3f2a…", "by": "operator:ana"}
type SecretSet struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	Sealed string `json:"sealed"`
	KeyID  string `json:"key_id"`
	By     string `json:"by"`
}

func (SecretSet) EventType() string { return TypeSecretSet }

// RosterChanged (on RosterStream): the mesh's roster (every routed name
// and the address that serves it) became revision Revision, the version
// of the event on its stream: Removed left it and Added joined it, against
// the revision before (a route whose address changed is removed, then
// added). Digest is RosterDigest of the routes at Revision. The controller
// appends it before the first declaration composed against that roster.
//
//	{"revision": 3, "digest": "sha256:…", "added": [{"name": "forge.z", "address": "10.0.0.2", "node": "g14"}], "removed": []}
type RosterChanged struct {
	Revision uint64        `json:"revision"`
	Digest   string        `json:"digest"`
	Added    []RosterRoute `json:"added,omitempty"`
	Removed  []RosterRoute `json:"removed,omitempty"`
}

// RosterRoute is one routed name and the node and address serving it. Its
// JSON is that of declaration.Route, field for field.
type RosterRoute struct {
	Name    string `json:"name"`
	Address string `json:"address,omitempty"`
	Node    string `json:"node"`
}

func (RosterChanged) EventType() string { return TypeRosterChanged }

func (ModuleRemoved) EventType() string { return TypeModuleRemoved }
func (NodeRemoved) EventType() string   { return TypeNodeRemoved }

func (NodeRegistered) EventType() string           { return TypeNodeRegistered }
func (NodeAdopted) EventType() string              { return TypeNodeAdopted }
func (NodeSettingSet) EventType() string           { return TypeNodeSettingSet }
func (ModuleDefined) EventType() string            { return TypeModuleDefined }
func (ModuleAssigned) EventType() string           { return TypeModuleAssigned }
func (ModuleReleased) EventType() string           { return TypeModuleReleased }
func (ModuleTaken) EventType() string              { return TypeModuleTaken }
func (ArtifactRecorded) EventType() string         { return TypeArtifactRecorded }
func (DeclarationComposed) EventType() string      { return TypeDeclarationComposed }
func (DeclarationComposeFailed) EventType() string { return TypeDeclarationComposeFailed }
func (DeclarationPushed) EventType() string        { return TypeDeclarationPushed }
func (DeclarationPushFailed) EventType() string    { return TypeDeclarationPushFailed }
func (ApplyReported) EventType() string            { return TypeApplyReported }
func (ReportDeliveredLate) EventType() string      { return TypeReportDeliveredLate }
func (ModuleDeployed) EventType() string           { return TypeModuleDeployed }
func (ReportRefused) EventType() string            { return TypeReportRefused }
func (ReportThrottled) EventType() string          { return TypeReportThrottled }
func (TokenCreated) EventType() string             { return TypeTokenCreated }
func (TokenRevoked) EventType() string             { return TypeTokenRevoked }
