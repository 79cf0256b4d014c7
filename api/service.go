package api

import (
	"context"
	"time"

	"meshplane/events"
)

// Service is everything the CLI does, commands and queries. Two types
// implement it: controller.Controller (the mesh itself: a store, its
// projections and the write side) and Client (the same calls over HTTP to a
// running controller), so the CLI renders the same output either way.
//
// Errors: a command or query the mesh refuses is a *commands.Rejection (in
// both implementations), which the CLI maps to its exit code 3. Every other
// error is a failure (exit 1).
type Service interface {
	// Info says what the controller is and how far its projections are.
	Info(ctx context.Context) (Info, error)

	// Status is each node's sync and health (every node when Nodes is
	// empty). An unknown node is a rejection (node-unknown).
	Status(ctx context.Context, req StatusRequest) (StatusResponse, error)
	// NodeShow is one node: its status and its own holds.
	NodeShow(ctx context.Context, node string) (NodeShow, error)
	// Resources is what runs on a node now: every resource of the
	// declaration it last applied, with the state that apply left it in
	// (running, held and why, failed and why, restarted after it was
	// found stopped). An unknown node is a rejection (node-unknown).
	Resources(ctx context.Context, node string) (NodeResources, error)
	// Timeline is one page of the audit timeline, filtered.
	Timeline(ctx context.Context, req TimelineRequest) (TimelinePage, error)
	// Why is every apply that touched a resource on a node, and the push
	// behind each.
	Why(ctx context.Context, req WhyRequest) (WhyResponse, error)
	// Roster is a node's current declaration: its routed names.
	Roster(ctx context.Context, node string) (ComposedDecl, error)
	// RosterHistory is every declaration composed for a node, oldest first,
	// each with what changed since the one before.
	RosterHistory(ctx context.Context, node string) (RosterHistory, error)
	// RosterDiff is what changed between two of a node's declarations.
	RosterDiff(ctx context.Context, req RosterDiffRequest) (RosterDiff, error)
	// Churn is each node's churn episodes, open and past.
	Churn(ctx context.Context, req ChurnRequest) (ChurnResponse, error)
	// NodeList is every registered node.
	NodeList(ctx context.Context) (NodeList, error)
	// ModuleList is every defined module.
	ModuleList(ctx context.Context) (ModuleList, error)
	// ModuleShow is one defined module (module-unknown otherwise).
	ModuleShow(ctx context.Context, module string) (ModuleShow, error)
	// Diff is what changed in the mesh between two moments, per node and
	// per module. A moment that does not parse, is past the head, or a
	// From after To is a rejection (invalid).
	Diff(ctx context.Context, req DiffRequest) (MeshDiff, error)

	// RegisterNodes registers several nodes, all or none: if one is refused,
	// none is registered.
	RegisterNodes(ctx context.Context, req RegisterNodesRequest) (CommandResult, error)
	// AdoptNode marks a node as adopted (it existed before the mesh).
	AdoptNode(ctx context.Context, req NodeRequest) (CommandResult, error)
	// SetSetting sets (or, with an empty value, clears) a node setting.
	SetSetting(ctx context.Context, req SetSettingRequest) (CommandResult, error)
	// DefineModules defines (or redefines) several modules, all or none.
	DefineModules(ctx context.Context, req DefineModulesRequest) (CommandResult, error)
	// Assign assigns a module to a node.
	Assign(ctx context.Context, req ModuleNodeRequest) (CommandResult, error)
	// Take takes an assigned module on an adopted node.
	Take(ctx context.Context, req ModuleNodeRequest) (CommandResult, error)
	// Release releases a module from a node.
	Release(ctx context.Context, req ModuleNodeRequest) (CommandResult, error)
	// RecordArtifact records a build of a module's artifact.
	RecordArtifact(ctx context.Context, req RecordArtifactRequest) (CommandResult, error)
	// Plan is what the next push would do on each node, as if the
	// request's commands had run first; it appends nothing.
	Plan(ctx context.Context, req PlanRequest) (PlanResponse, error)
	// Deploy makes compose run a module's recorded builds: the one with
	// the digest given, or the latest of each artifact.
	Deploy(ctx context.Context, req DeployRequest) (CommandResult, error)
	// Revert makes a module again what it was at a moment: its definition
	// and the builds it ran then, as new events naming the revert (history
	// is never rewritten). A moment before the module was defined is a
	// rejection (module-unknown).
	Revert(ctx context.Context, req RevertRequest) (RevertResult, error)
	// Push composes and pushes now, whether or not the declaration changed:
	// one node, or every node when Node is empty.
	Push(ctx context.Context, req PushRequest) (PushResponse, error)
	// RemoveModule removes a module (module.removed), refused while it is
	// assigned unless Release (module.released on each node first).
	RemoveModule(ctx context.Context, req RemoveModuleRequest) (CommandResult, error)
	// RemoveNode removes a node (node.removed), revoking its bus users,
	// refused while modules are assigned to it unless Drain.
	RemoveNode(ctx context.Context, req RemoveNodeRequest) (CommandResult, error)
}

// Rejection codes the read side adds to those of package commands.
const (
	// CodeDeclarationUnknown: a query named a declaration never composed for
	// that node.
	CodeDeclarationUnknown = "declaration-unknown"
	// CodeResourceUnknown: a query named a resource that no declaration of
	// that node declared and no apply touched.
	CodeResourceUnknown = "resource-unknown"
)

// Timeline page sizes.
const (
	DefaultTimelineLimit = 100   // a page when the request names no limit
	MaxTimelineLimit     = 10000 // the largest page a request may ask for
)

// Info is what a controller says about itself (GET /v1/info).
type Info struct {
	Version            string    `json:"version"`
	Role               string    `json:"role"` // "leader", "standby" (another controller leads: reads only), or "local" for a CLI on its own store
	Started            time.Time `json:"started,omitzero"`
	StoreHead          uint64    `json:"store_head"`          // position of the last stored event
	ProjectionPosition uint64    `json:"projection_position"` // last position the projections folded
	Nodes              int       `json:"nodes"`               // nodes the status projection knows
	Interval           string    `json:"interval,omitempty"`  // between pushes of what changed ("5m0s")
	Publishing         bool      `json:"publishing"`          // a bus is attached: commands push
	// Chain is the store's hash chain head, as mesh store head prints it
	// (events.ChainHead.String): the line to keep off the host.
	Chain string `json:"chain,omitempty"`
}

// Roles.
const (
	RoleLeader  = "leader"
	RoleStandby = "standby" // a controller waiting for the store's leader lock: it serves reads, refuses writes (CodeStandby)
	RoleLocal   = "local"
)

// Skipped is what the projections could not fold: events of types this
// build does not know (kept in the store, counted by type) and events that
// did not decode or that a projection refused (the first 100 kept).
type Skipped struct {
	UnknownTypes  map[string]int `json:"unknown_types,omitempty"`
	Failures      []Failure      `json:"failures,omitempty"`
	FailuresTotal int            `json:"failures_total,omitempty"`
}

// StatusRequest names the nodes to show; none means every node.
type StatusRequest struct {
	Nodes []string `json:"nodes,omitempty"`
}

// StatusResponse is each node's status, in the order asked (or sorted).
type StatusResponse struct {
	Nodes   []NodeStatus `json:"nodes"`
	Skipped Skipped      `json:"skipped,omitzero"`
	AsOf    *Moment      `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// NodeShow is one node's status and its own holds.
type NodeShow struct {
	Status NodeStatus `json:"status"`
	Holds  []Hold     `json:"holds"`
	// Access is the node's join tokens and bus users, when its history
	// has any.
	Access *NodeAccess `json:"access,omitempty"`
	AsOf   *Moment     `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// NodeAccess is what a node's history says of its bus users.
type NodeAccess struct {
	Tokens []JoinTokenView `json:"tokens"` // by expiry
	Keys   []KeyView       `json:"keys"`   // oldest first
}

// JoinTokenView is an issued join token: never its secret.
type JoinTokenView struct {
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expires_at"`
	UsedAt    time.Time `json:"used_at,omitzero"`
	From      string    `json:"from,omitempty"`
}

// KeyView is one of a node's bus users, by its public key.
type KeyView struct {
	PublicKey string `json:"public_key"`
	Revoked   bool   `json:"revoked"`
}

// TimelineRequest filters the timeline and picks a page by position.
//
// Without a cursor the page is the last Limit matches. Before: the last
// Limit matches at positions below it (paging back in time). After (or
// Forward, to start from the oldest): the first Limit matches at positions
// above After (paging forward; with Before as well, only those below
// Before). Entries are always in position order.
type TimelineRequest struct {
	Node        string    `json:"node,omitempty"`
	Module      string    `json:"module,omitempty"`
	Resource    string    `json:"resource,omitempty"`
	Type        string    `json:"type,omitempty"`
	Correlation string    `json:"correlation,omitempty"`
	Since       time.Time `json:"since,omitzero"` // at or after
	Until       time.Time `json:"until,omitzero"` // before
	After       uint64    `json:"after,omitempty"`
	Before      uint64    `json:"before,omitempty"`
	Forward     bool      `json:"forward,omitempty"` // page forward from After, 0 being before the oldest
	Limit       int       `json:"limit,omitempty"`   // 0: DefaultTimelineLimit; at most MaxTimelineLimit
}

// Forwards reports whether r pages forward (After or Forward set).
func (r TimelineRequest) Forwards() bool { return r.Forward || r.After > 0 }

// TimelinePage is one page of matches. Next is the cursor of the next page
// in the same direction (pass it as Before when paging back, as After when
// paging forward); 0 when there were no more matches.
type TimelinePage struct {
	Entries []Entry `json:"entries"`
	Next    uint64  `json:"next,omitempty"`
	Skipped Skipped `json:"skipped,omitzero"`
	AsOf    *Moment `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// WhyRequest names a resource on a node.
type WhyRequest struct {
	Node     string `json:"node"`
	Resource string `json:"resource"`
}

// WhyResponse is every apply that touched the resource, oldest first.
type WhyResponse struct {
	Node     string     `json:"node"`
	Resource string     `json:"resource"`
	Touches  []WhyTouch `json:"touches"`
	AsOf     *Moment    `json:"as_of,omitempty"` // the moment answered for (At); absent: now
	// Engine is, for a container, how the engine runs it now as its
	// node's agent last said (its last container.* event); absent when
	// the agent said nothing of it.
	Engine *ContainerStatus `json:"engine,omitempty"`
}

// WhyTouch is one touch and the rest of the push behind it: the node's
// other entries sharing its correlation (compose, push), in order.
type WhyTouch struct {
	Touch
	Push []Entry `json:"push,omitempty"`
	// Deploy is what deployed the build a replaced container runs, when
	// its image changed: the build's artifact.recorded and the
	// module.deployed (an operator's, a roll-out policy's, or a first
	// build's), in order (projections.Timeline.DeployBehind).
	Deploy []Entry `json:"deploy,omitempty"`
	// Changes is, for a replace or an update, each field it names with
	// what it was declared before and is declared now (a secret, or a
	// value longer than a line, as its digest: agent.DeclaredChanges).
	Changes []Change `json:"changes,omitempty"`
	// Commands are the commands behind the declaration it applied: the
	// module.defined, module.deployed, assign, take or release of its
	// module and the node's node.setting-set since the declaration
	// applied before, each with its actor and time
	// (projections.Timeline.CommandsBehind).
	Commands []Entry `json:"commands,omitempty"`
}

// RosterHistory is every declaration composed for a node, oldest first.
type RosterHistory struct {
	Node         string               `json:"node"`
	Declarations []RosterHistoryEntry `json:"declarations"`
	AsOf         *Moment              `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// RosterHistoryEntry is one composed declaration and what changed since the
// previous one (nil for the first).
type RosterHistoryEntry struct {
	ComposedDecl
	Changed *RosterDiff `json:"changed,omitempty"`
}

// RosterDiffRequest names two of a node's declarations ("novox/3").
type RosterDiffRequest struct {
	Node string `json:"node"`
	From string `json:"from"`
	To   string `json:"to"`
}

// RosterDiff is what changed from one declaration to another.
type RosterDiff struct {
	From             string   `json:"from"`
	To               string   `json:"to"`
	Added            []string `json:"added"`   // routed names
	Removed          []string `json:"removed"` // routed names
	ResourcesAdded   []string `json:"resources_added"`
	ResourcesRemoved []string `json:"resources_removed"`
	ResourcesChanged []string `json:"resources_changed"` // in both, with another digest
	AsOf             *Moment  `json:"as_of,omitempty"`   // the moment answered for (At); absent: now
}

// ChurnRequest names the nodes; none means every node.
type ChurnRequest struct {
	Nodes []string `json:"nodes,omitempty"`
}

// ChurnResponse is each node's churn episodes, in the order asked.
type ChurnResponse struct {
	Nodes []NodeChurn `json:"nodes"`
	AsOf  *Moment     `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// NodeChurn is one node's episodes, oldest first.
type NodeChurn struct {
	Node     string    `json:"node"`
	Episodes []Episode `json:"episodes"`
}

// Command requests. Operator is who asks (recorded as the events' actor,
// "operator:<name>"); it is required.

// RegisterNodesRequest registers nodes.
type RegisterNodesRequest struct {
	Operator string   `json:"operator"`
	Nodes    []string `json:"nodes"`
}

// NodeRequest names one node.
type NodeRequest struct {
	Operator string `json:"operator"`
	Node     string `json:"node"`
}

// SetSettingRequest sets a node setting (private-address, artifact-store,
// port.NAME); an empty Value clears it.
type SetSettingRequest struct {
	Operator string `json:"operator"`
	Node     string `json:"node"`
	Key      string `json:"key"`
	Value    string `json:"value"`
}

// DefineModulesRequest defines modules from their parsed specs.
type DefineModulesRequest struct {
	Operator string             `json:"operator"`
	Modules  []ModuleDefinition `json:"modules"`
}

// ModuleDefinition is one module and its spec (as parsed from its file by
// commands.ParseModuleFile).
type ModuleDefinition struct {
	Module string            `json:"module"`
	Spec   events.ModuleSpec `json:"spec"`
}

// ModuleNodeRequest names a module and a node (assign, take, release).
type ModuleNodeRequest struct {
	Operator string `json:"operator"`
	Module   string `json:"module"`
	Node     string `json:"node"`
}

// RecordArtifactRequest records a build of a module's artifact.
type RecordArtifactRequest struct {
	Operator string `json:"operator"`
	Module   string `json:"module"`
	Name     string `json:"name"`
	Digest   string `json:"digest"`
}

// DeployRequest deploys a module's recorded build (Digest), or its latest
// recorded builds (Digest empty).
type DeployRequest struct {
	Operator string `json:"operator"`
	Module   string `json:"module"`
	Digest   string `json:"digest,omitempty"`
}

// PushRequest names the node to push to; empty means every node.
type PushRequest struct {
	Operator string `json:"operator"`
	Node     string `json:"node,omitempty"`
}

// CommandResult is what each command of a request appended, in order.
type CommandResult struct {
	Results []Appended `json:"results"`
}

// Appended is what one command appended to its stream; no events means the
// command changed nothing.
type Appended struct {
	Stream string     `json:"stream"`
	Events []EventRef `json:"events"`
}

// EventRef names a stored event.
type EventRef struct {
	ID       string    `json:"id"`
	Stream   string    `json:"stream"`
	Version  uint64    `json:"version"`
	Position uint64    `json:"position"`
	Type     string    `json:"type"`
	At       time.Time `json:"at"`
}

// PushResponse is one result per node pushed to, in node order.
type PushResponse struct {
	Pushes []PushResult `json:"pushes"`
}

// PushResult is one node's push: the declaration handed to the bus, or why
// there is none (the compose or the send failed; recorded on its stream).
type PushResult struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration,omitempty"`
	Digest      string `json:"digest,omitempty"`
	Error       string `json:"error,omitempty"`
}
