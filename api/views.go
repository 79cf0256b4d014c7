package api

import (
	"time"

	"meshplane/events"
)

// The API's own views of what the projections and the agent hold. Each
// mirrors the struct the controller converts it from (controller's
// wire.go, the one place that does), field for field, with the JSON names
// that README.md calls a public API: a projection may rename or retype its
// fields, and the conversion, not the API, changes. The event payloads a
// view carries (events.ApplyReported, events.ResourceRef,
// events.ModuleCount) are the store's own format and keep their names for
// as long as history holds them.

// Failure is an event some projection (or the codec) could not fold.
type Failure struct {
	Position   uint64 `json:"position"`
	Stream     string `json:"stream"`
	Type       string `json:"type"`
	Projection string `json:"projection,omitempty"` // "" when the payload did not decode
	Err        string `json:"error"`
}

// NodeStatus is a node's status.
type NodeStatus struct {
	Node    string `json:"node"`
	Sync    string `json:"sync"`
	Health  string `json:"health"`
	Churn   bool   `json:"churn"` // a churn episode is open
	Adopted bool   `json:"adopted,omitempty"`
	// Modules is the state of every module assigned to the node or named by
	// its last apply, by name.
	Modules map[string]ModuleStatus `json:"modules"`
	// Held counts held resources per module, largest first.
	Held          []events.ModuleCount `json:"held"`
	Composed      *DeclMark            `json:"composed,omitempty"`
	ComposeFailed *ComposeFailure      `json:"compose_failed,omitempty"` // only when it is the last compose attempt: failing until a compose succeeds
	Pushed        *DeclMark            `json:"pushed,omitempty"`
	PushFailed    *PushFailure         `json:"push_failed,omitempty"`
	Applied       *ApplyRecord         `json:"applied,omitempty"`
	// ReportRefused is set when the node's latest report was refused (a
	// report.refused after its last recorded apply): the node is sending
	// what the controller cannot accept, and its health is failing.
	ReportRefused *ReportRefusal `json:"report_refused,omitempty"`
	// LastSeen is the node's last heartbeat the controller heard, by the
	// controller's clock (not a projection's: heartbeats are never
	// events); absent when it heard none since it started, or runs
	// without liveness (a CLI on its own store). Sync is SyncUnreachable
	// when it was not heard within the controller's bound
	// (--silent-after).
	LastSeen *time.Time `json:"last_seen,omitempty"`
	// AgentVersion is the version the node's agent said in its last
	// heartbeat (mesh version on the host); absent as LastSeen is, or
	// when the agent said none.
	AgentVersion string `json:"agent_version,omitempty"`
	// Workload is the node's workload axis: the worst state of a declared
	// container of its applied declaration (starting, running, unhealthy,
	// crash-looping, exited, oom-killed, vanished), or "unknown" when its
	// agent says nothing of its containers (an older build).
	Workload string `json:"workload,omitempty"`
	// Containers is the last state the node's agent said of each
	// container of the applied declaration, by name.
	Containers map[string]ContainerStatus `json:"containers,omitempty"`
}

// ContainerStatus is what the engine runs of one container, as the node's
// agent last said it changed (its last container.* event).
type ContainerStatus struct {
	Module   string    `json:"module"`
	State    string    `json:"state"` // starting, running, unhealthy, crash-looping, exited, oom-killed, vanished
	At       time.Time `json:"at"`
	ExitCode int       `json:"exit_code,omitempty"`
	Restarts int       `json:"restarts,omitempty"` // a crash loop's, since Since
	Since    time.Time `json:"since,omitzero"`
	Health   string    `json:"health,omitempty"`
	Output   string    `json:"output,omitempty"`   // the last health probe's
	LogLine  string    `json:"log_line,omitempty"` // the last line of its log when it died
	Position uint64    `json:"position"`           // Reason says why in one line: "exit code 1 at 19:00:02, the 14th
	// restart since 18:59:30: <its last log line>".
	Reason string `json:"reason,omitempty"`
}

// SyncUnreachable is the sync of a node whose agent the controller has not
// heard within its bound (mesh up --silent-after): whatever its last
// apply says, nobody knows what runs there now.
const SyncUnreachable = "unreachable"

// ModuleStatus is one module's state on a node.
type ModuleStatus struct {
	Assigned bool   `json:"assigned"`
	Taken    bool   `json:"taken"`
	State    string `json:"state"`            // converged, waiting-on-take, failing, pending (not yet in an apply), or crash-looping, stopped, unhealthy, starting (its containers')
	Held     int    `json:"held,omitempty"`   // resources held for take
	Failed   int    `json:"failed,omitempty"` // resources whose apply failed
	// Reason says why a pending module is not in the applied declaration:
	// "the latest compose failed: " and its error, "in NODE/N, not applied
	// yet", or "not composed yet".
	Reason string `json:"reason,omitempty"`
}

// DeclMark is a declaration at a point of the stream.
type DeclMark struct {
	Declaration string    `json:"declaration"`
	Digest      string    `json:"digest"`
	Position    uint64    `json:"position"`
	At          time.Time `json:"at"`
	Correlation string    `json:"correlation,omitempty"`
}

// ComposeFailure is the last declaration.compose-failed of a node.
type ComposeFailure struct {
	Read     string    `json:"read,omitempty"`
	Error    string    `json:"error"`
	Position uint64    `json:"position"`
	At       time.Time `json:"at"`
}

// PushFailure is the last declaration.push-failed of a node.
type PushFailure struct {
	Declaration string    `json:"declaration"`
	Error       string    `json:"error"`
	Position    uint64    `json:"position"`
	At          time.Time `json:"at"`
}

// ReportRefusal is the last report.refused of a node: the controller
// refused a message on its report subject (see events.ReportRefused).
type ReportRefusal struct {
	Reason   string    `json:"reason"`
	Detail   string    `json:"detail"`
	Digest   string    `json:"digest"`
	Size     int       `json:"size"`
	Position uint64    `json:"position"`
	At       time.Time `json:"at"`
}

// ApplyRecord is the last apply of a node: the report as received (with
// the declaration's digest filled in when the report did not carry it) and
// its one-line summary.
type ApplyRecord struct {
	DeclMark
	Report  events.ApplyReported `json:"report"`
	Summary string               `json:"summary"`
	// HoldsUnknown: the report's held_since names no held list (history
	// written past the door), so what it held is not known.
	HoldsUnknown bool `json:"holds_unknown,omitempty"`
}

// NodeResources is what runs on a node now, as its last apply report
// says: every resource of the declaration it applied, with the state that
// apply left it in.
type NodeResources struct {
	Node string `json:"node"`
	// Applied is the last apply's declaration and the apply's time (the
	// agent's clock); nil when the node never reported one.
	Applied *DeclMark `json:"applied,omitempty"`
	// ReceivedAt is when the controller received that report.
	ReceivedAt time.Time       `json:"received_at,omitzero"`
	Resources  []ResourceState `json:"resources"` // in the declaration's order
	Removed    []string        `json:"removed,omitempty"`
	// Partial: the applied declaration's compose is not known here, and
	// Resources lists only those its report named.
	Partial bool    `json:"partial,omitempty"`
	AsOf    *Moment `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// ResourceState is one declared resource as the last apply left it.
type ResourceState struct {
	Name   string `json:"name"`
	Kind   string `json:"kind,omitempty"`
	Module string `json:"module,omitempty"`
	Digest string `json:"digest,omitempty"`
	// State: running, in-place (a directory or file as declared),
	// restarted (found stopped behind the agent's back, started again),
	// held or failed.
	State string `json:"state"`
	// Outcome is what the last apply did: unchanged, created, replaced,
	// updated, held or failed.
	Outcome string   `json:"outcome"`
	Fields  []string `json:"fields,omitempty"`
	Reason  string   `json:"reason,omitempty"` // why held, the failure, or why restarted
}

// Hold is one held resource.
type Hold struct {
	Name   string `json:"name"`
	Module string `json:"module"`
	Reason string `json:"reason"`
	// Since is the apply from which the resource has been held, without a
	// break, for the same reason.
	Since HoldSince `json:"since"`
}

// HoldSince marks the apply that first held a resource.
type HoldSince struct {
	Declaration string    `json:"declaration"`
	Position    uint64    `json:"position"`
	At          time.Time `json:"at"`
}

// Entry is one event as the timeline shows it.
type Entry struct {
	Position    uint64    `json:"position"`
	At          time.Time `json:"at"`
	Stream      string    `json:"stream"`
	Type        string    `json:"type"`
	Actor       string    `json:"actor,omitempty"`
	Correlation string    `json:"correlation,omitempty"`
	Node        string    `json:"node,omitempty"`
	Modules     []string  `json:"modules,omitempty"`
	Resources   []string  `json:"resources,omitempty"` // the resources an apply touched (not unchanged)
	Declaration string    `json:"declaration,omitempty"`
	Digest      string    `json:"digest,omitempty"`
	Heavy       bool      `json:"heavy,omitempty"` // a heavy pass (docs/design.md rule 7)
	Churn       string    `json:"churn,omitempty"` // "loop detected", "flip detected", "loop cleared", ... at this event
	Summary     string    `json:"summary"`
	// Run is set when the entry stands for a run of identical outcomes;
	// the entry is then the run's first.
	Run *Run `json:"run,omitempty"`
	// Idle marks an apply that created, updated, replaced, removed and
	// failed nothing (it may have held, as before).
	Idle bool `json:"idle,omitempty"`
	// Held is every resource an apply held, and why, in full, a quiet
	// report's too (its stored held_since resolved).
	Held []events.Held `json:"held,omitempty"`
	// HoldsUnknown: the apply's held_since names no held list (history
	// written past the door); Held is empty and the summary says so.
	HoldsUnknown bool `json:"holds_unknown,omitempty"`
}

// Run is a run of entries of one node with identical outcomes, collapsed
// into one line.
type Run struct {
	Count         int       `json:"count"` // entries in the run, 2 or more
	From          time.Time `json:"from"`  // the first's time
	To            time.Time `json:"to"`    // the last's time
	FirstPosition uint64    `json:"first_position"`
	LastPosition  uint64    `json:"last_position"`
}

// Touch is one thing an apply did to one resource.
type Touch struct {
	Entry  Entry    `json:"entry"`
	Action string   `json:"action"` // created, updated, replaced, removed, held, failed
	Fields []string `json:"fields,omitempty"`
	Reason string   `json:"reason,omitempty"` // why it was held, or the failure
}

// ComposedDecl is one composed declaration of a node.
type ComposedDecl struct {
	Declaration string               `json:"declaration"`
	Digest      string               `json:"digest"`
	Position    uint64               `json:"position"`
	At          time.Time            `json:"at"`
	Correlation string               `json:"correlation,omitempty"`
	Roster      []string             `json:"roster"`
	Resources   []events.ResourceRef `json:"resources"`
	AsOf        *Moment              `json:"as_of,omitempty"` // the moment answered for (At); absent: now
}

// Episode is one churn episode on a node: from the first heavy pass of the
// loop (or the first change of the flip) to the second quiet pass after it.
type Episode struct {
	Node        string   `json:"node"`
	Loop        bool     `json:"loop"` // two heavy passes in a row were seen
	Flip        bool     `json:"flip"` // a digest alternated A→B→A
	Start       Mark     `json:"start"`
	Detected    Mark     `json:"detected"`
	End         *Mark    `json:"end,omitempty"` // nil while the episode is open
	Passes      int      `json:"passes"`        // applies from start to end
	HeavyPasses int      `json:"heavy_passes"`
	Flips       int      `json:"flips"`
	Evidence    Evidence `json:"evidence"`
}

// Active reports whether the episode is still open.
func (e Episode) Active() bool { return e.End == nil }

// Mark is a point in the stream.
type Mark struct {
	Position uint64    `json:"position"`
	At       time.Time `json:"at"`
}

// Evidence is what an episode saw.
type Evidence struct {
	// Declarations are the distinct declarations of the episode's passes
	// and flips, in the order first seen; the rest are counted in
	// MoreDeclarations.
	Declarations     []DeclRef `json:"declarations"`
	MoreDeclarations int       `json:"more_declarations,omitempty"`
	// Fields counts, per replaced spec field, the resources replaced for it.
	Fields map[string]int `json:"fields"`
	// FailedReads are the distinct compose failures seen on the node.
	FailedReads []FailedRead `json:"failed_reads"`
	// RosterChanged are the routed names that left or came back in a flip.
	RosterChanged []string `json:"roster_changed"`
}

// DeclRef names a declaration.
type DeclRef struct {
	Declaration string `json:"declaration"`
	Digest      string `json:"digest"`
	Position    uint64 `json:"position"` // where it was first seen in the episode
}

// FailedRead is a compose failure (declaration.compose-failed).
type FailedRead struct {
	Read     string `json:"read,omitempty"`
	Error    string `json:"error"`
	Position uint64 `json:"position"` // the first time it was seen
	Count    int    `json:"count"`
}

// Compared is one projection's state before and after a rebuild, at the
// same position: Same when the two serialize to the same bytes. Kept when
// the two compared are what a checkpoint keeps of each (the state and its
// bounded recent history), not the whole state: the live projections were
// resumed from a checkpoint, so they never held what it leaves out.
type Compared struct {
	Name     string `json:"name"`
	Same     bool   `json:"same"`
	OldBytes int    `json:"old_bytes"`
	NewBytes int    `json:"new_bytes"`
	Kept     bool   `json:"kept,omitempty"`
}

// Preview is what applying a declaration would do on a node, without
// applying it: the agent's dry run (mesh plan).
type Preview struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration"`
	Digest      string `json:"digest,omitempty"`
	// Hosts is why the hosts file would be rewritten in place; "" when it
	// would not.
	Hosts string `json:"hosts,omitempty"`
	// Steps are the plan's steps that are not unchanged, in plan order
	// (declared resources, then removals).
	Steps     []PreviewStep `json:"steps,omitempty"`
	Unchanged int           `json:"unchanged"`
	// Outcome is the report the apply would make if no runtime call
	// failed.
	Outcome events.ApplyReported `json:"outcome"`
	// Images are the images the creates and replaces need, as the node's
	// agent found them (present, pullable, unavailable, unknown); absent
	// when the agent was not asked or its runtime pulls nothing (the
	// simulated one). An apply pulls every one before it stops anything.
	Images []ImageCheck `json:"images,omitempty"`
}

// ImageCheck is what a node's agent found of one image a plan needs.
type ImageCheck struct {
	Image      string   `json:"image"`
	State      string   `json:"state"` // present, pullable, unavailable, unknown
	Detail     string   `json:"detail,omitempty"`
	Containers []string `json:"containers"`
}

// PreviewStep is one step of a Preview.
type PreviewStep struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Module  string   `json:"module,omitempty"`
	Action  string   `json:"action"` // create, replace, update, remove, hold, reject
	Fields  []string `json:"fields,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// Change is one changed field of a resource: "mounts./data",
// "/var/lib/forge" → "/srv/forge".
type Change struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}
