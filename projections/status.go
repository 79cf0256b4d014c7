package projections

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"meshplane/events"
)

// Sync values: how a node's last applied declaration relates to its last
// pushed one.
const (
	SyncInSync     = "in-sync"    // the last applied declaration is the last pushed
	SyncPending    = "pending"    // a later declaration was pushed and not yet applied
	SyncUnreported = "unreported" // nothing applied was ever reported
)

// Health values, in the order they win: churning over failing over
// unknown over waiting-on-take over converged.
//
// Health has a compose axis (docs/design.md, "Status has two axes"): a node
// whose latest compose attempt failed is failing until a compose for it
// succeeds, whatever its agent re-applies meanwhile (an older declaration
// applied again says nothing of the one that did not compose).
const (
	HealthChurning      = "churning"        // a churn episode is open (Churn.Active)
	HealthFailing       = "failing"         // the last apply failed resources, the latest compose failed, or the latest report was refused
	HealthUnknown       = "unknown"         // the node never reported an apply: nothing is known of it
	HealthWaitingOnTake = "waiting-on-take" // the last apply held resources for untaken modules
	HealthConverged     = "converged"
)

// Status is each node's two axes (docs/design.md: sync and health, as Argo CD's),
// with held counts per module and the last compose error.
//
// Health reads the churn projection at query time, so a Status is only
// consistent with the Churn it was built with having folded the same events
// (the Runner feeds both; Set wires them).
type Status struct {
	mu      sync.RWMutex
	churn   *Churn
	nodes   map[string]*statusNode
	reports *Reports // resolves compact apply reports
}

// statusNode is one node's folded state. The marks are values (a zero
// Position means "none yet"), so a fold allocates nothing but the record
// of an apply.
type statusNode struct {
	modules       []string // assigned, sorted
	taken         []string // taken, sorted
	adopted       bool
	composed      DeclMark
	composeFailed ComposeFailure
	pushed        DeclMark
	pushFailed    PushFailure
	refused       ReportRefusal    // the last report.refused
	applied       *ApplyRecord     // overwritten in place by each apply: never handed out, only copies of it
	decls         declIndex[*decl] // declaration id → what was composed
	// containers is each container's last state event (status_workload.go);
	// followed says the node's agent said one, ever.
	containers map[string]ContainerStatus
	followed   bool
}

// decl is what status keeps of a composed declaration.
type decl struct {
	digest    string
	resources []events.ResourceRef
	at        time.Time // when it was composed
	pushed    bool      // a push of it is recorded (declaration.pushed or declaration.push-failed)
	// unknown says its resources could not be read: stored by reference
	// (resources_since) to a declaration the reader did not find.
	unknown bool
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

// ApplyRecord is the last apply of a node: the report as received, with the
// declaration's digest filled in from its composed event when the report
// did not carry it, and its one-line summary (ApplyReported.Summary, made
// when queried). Status keeps one per node, which each apply overwrites in
// place (an allocation per apply was most of status's garbage): a record
// it hands out (NodeStatus.Applied, a snapshot's) is a copy.
type ApplyRecord struct {
	DeclMark
	Report  events.ApplyReported `json:"report"`
	Summary string               `json:"summary"`
	// HoldsUnknown: the report's held_since names no held list
	// (ErrHoldsUnknown), so what it held is not known; Report.Held is empty.
	HoldsUnknown bool `json:"holds_unknown,omitempty"`
}

// NodeStatus is a node's status as queried.
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
	// Workload is the node's workload axis (status_workload.go): the worst
	// state of a declared container (running when all run), or unknown
	// when its agent says nothing of them.
	Workload string `json:"workload,omitempty"`
	// Containers is the last state of each container of the applied
	// declaration the agent said one of, by name.
	Containers map[string]ContainerStatus `json:"containers,omitempty"`
}

// ModuleStatus is one module's state on a node.
type ModuleStatus struct {
	Assigned bool   `json:"assigned"`
	Taken    bool   `json:"taken"`
	State    string `json:"state"`            // converged, waiting-on-take, failing, pending (not yet in an apply), or a workload health (crash-looping, stopped, unhealthy, starting)
	Held     int    `json:"held,omitempty"`   // resources held for take
	Failed   int    `json:"failed,omitempty"` // resources whose apply failed
	// Reason says why a pending module is not in the applied declaration:
	// the node's latest compose failed (its error: the read, or the
	// modules that clash, or the artifact with no build), or the module is
	// in a declaration not applied yet, or not composed yet.
	Reason string `json:"reason,omitempty"`
}

// Module states beyond the health values.
const ModulePending = "pending" // assigned, and absent from the applied declaration

// Reasons of a pending module (ModuleStatus.Reason), beside the compose
// error: PendingComposeFailed + the error.
const (
	PendingComposeFailed = "the latest compose failed: " // + its error
	PendingNotApplied    = "in %s, not applied yet"      // the latest composed declaration
	PendingNotComposed   = "not composed yet"            // assigned after the latest compose
)

var _ Projection = (*Status)(nil)

// NewStatus returns an empty status projection reading churn for health. A
// nil churn means no node is ever churning.
func NewStatus(churn *Churn) *Status {
	return &Status{churn: churn, nodes: map[string]*statusNode{}, reports: NewReports()}
}

// Name is "status".
func (s *Status) Name() string { return "status" }

// Reset forgets everything (not the churn it reads: reset that too).
func (s *Status) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = map[string]*statusNode{}
	s.reports.Reset()
}

func (s *Status) node(name string) *statusNode {
	n := s.nodes[name]
	if n == nil {
		n = &statusNode{}
		s.nodes[name] = n
	}
	return n
}

// Fold records node lifecycle, compose, push and apply events.
func (s *Status) Fold(ev events.Event, p events.Payload) error {
	return s.fold(&ev, p, nodeOf(ev, p))
}

// fold is Fold of an event concerning node (nodeOf).
func (s *Status) fold(ev *events.Event, p events.Payload, node string) error {
	switch p.(type) {
	case events.NodeRegistered, events.NodeAdopted, events.ModuleAssigned, events.ModuleReleased,
		events.ModuleTaken, events.DeclarationComposed, events.DeclarationComposeFailed,
		events.DeclarationPushed, events.DeclarationPushFailed, events.ApplyReported, events.ReportRefused, events.NodeRemoved,
		events.ContainerStarting, events.ContainerRecovered, events.ContainerUnhealthy, events.ContainerCrashLooping,
		events.ContainerExited, events.ContainerOOMKilled, events.ContainerVanished:
	default:
		return nil
	}
	if node == "" {
		return unattributed(s.Name(), *ev)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := p.(events.NodeRemoved); ok {
		// A removed node is no node: status forgets it, and a node
		// registered again under its name starts anew.
		delete(s.nodes, node)
		return nil
	}
	holdsUnknown := false
	if a, ok := p.(events.ApplyReported); ok {
		var err error
		p, err = s.reports.resolve(ev, a, true)
		switch {
		case errors.Is(err, ErrHoldsUnknown):
			holdsUnknown = true
		case err != nil:
			return err
		}
	}
	n := s.node(node)
	if c, ok := events.ContainerOf(p); ok {
		if n.containers == nil {
			n.containers = map[string]ContainerStatus{}
		}
		n.containers[c.Container] = containerStatusOf(c, ev.Position)
		n.followed = true
		return nil
	}
	switch v := p.(type) {
	case events.NodeAdopted:
		n.adopted = true
	case events.ModuleAssigned:
		n.modules = insertSorted(n.modules, v.Module)
	case events.ModuleReleased:
		n.modules = removeSorted(n.modules, v.Module)
		n.taken = removeSorted(n.taken, v.Module)
	case events.ModuleTaken:
		n.taken = insertSorted(n.taken, v.Module)
	case events.DeclarationComposed:
		n.decls.add(v.Declaration, &decl{digest: v.Digest, resources: v.Resources, at: ev.At, unknown: v.ResourcesUnknown != ""})
		n.composed = DeclMark{Declaration: v.Declaration, Digest: v.Digest, Position: ev.Position, At: ev.At, Correlation: ev.Correlation}
	case events.DeclarationComposeFailed:
		n.composeFailed = ComposeFailure{Read: v.Read, Error: v.Error, Position: ev.Position, At: ev.At}
	case events.DeclarationPushed:
		digest := v.Digest
		d, _ := n.decls.get(v.Declaration)
		if d != nil {
			d.pushed = true
			if digest == "" {
				digest = d.digest
			}
		}
		n.pushed = DeclMark{Declaration: v.Declaration, Digest: digest, Position: ev.Position, At: ev.At, Correlation: ev.Correlation}
	case events.DeclarationPushFailed:
		// A put whose acknowledgement was lost may have reached the bus:
		// the node may apply it, and report so.
		if d, _ := n.decls.get(v.Declaration); d != nil {
			d.pushed = true
		}
		n.pushFailed = PushFailure{Declaration: v.Declaration, Error: v.Error, Position: ev.Position, At: ev.At}
	case events.ReportRefused:
		n.refused = ReportRefusal{Reason: v.Reason, Detail: v.Detail, Digest: v.Digest, Size: v.Size, Position: ev.Position, At: ev.At}
	case events.ApplyReported:
		digest := v.Digest
		if d, _ := n.decls.get(v.Declaration); digest == "" && d != nil {
			digest = d.digest
		}
		if n.applied == nil {
			n.applied = new(ApplyRecord)
		}
		*n.applied = ApplyRecord{
			DeclMark: DeclMark{Declaration: v.Declaration, Digest: digest, Position: ev.Position, At: ev.At, Correlation: ev.Correlation},
			Report:   v, HoldsUnknown: holdsUnknown,
		}
	}
	return nil
}

// Nodes lists every node status knows, sorted.
func (s *Status) Nodes() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.nodes))
}

// Of returns node's status.
func (s *Status) Of(node string) (NodeStatus, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.nodes[node]
	if !ok {
		return NodeStatus{}, fmt.Errorf("projections: status of %q: %w", node, ErrUnknownNode)
	}
	return s.of(node, n), nil
}

// Heard reports whether node's history holds a report from it since it was
// last registered: an apply recorded, or a report refused. A node never
// heard (its agent not started yet) is unreported, never unreachable, and
// the controller records no node.went-silent for it.
func (s *Status) Heard(node string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.nodes[node]
	return ok && (n.applied != nil || n.refused.Position > 0)
}

// ComposeFailure is node's NodeStatus.ComposeFailed without the rest of its
// status: its compose failure, when that is its last compose attempt
// (after its last compose, whatever was applied since). The controller's
// pass reads it for every node, to record a failure once and to push the
// compose that succeeds after it (commands.DecidePush).
func (s *Status) ComposeFailure(node string) (ComposeFailure, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.nodes[node]
	if !ok {
		return ComposeFailure{}, false
	}
	return n.lastComposeFailure()
}

// lastComposeFailure is the node's compose failure when the last compose
// attempt failed: only a declaration.composed after it clears it, never an
// apply (an agent re-applying its older declaration).
func (n *statusNode) lastComposeFailure() (ComposeFailure, bool) {
	f := n.composeFailed
	if f.Position > 0 && f.Position > n.composed.Position {
		return f, true
	}
	return ComposeFailure{}, false
}

func (s *Status) of(name string, n *statusNode) NodeStatus {
	st := NodeStatus{
		Node: name, Adopted: n.adopted, Modules: map[string]ModuleStatus{}, Held: []events.ModuleCount{},
	}
	if n.composed.Position > 0 {
		c := n.composed
		st.Composed = &c
	}
	if n.pushed.Position > 0 {
		p := n.pushed
		st.Pushed = &p
	}
	if n.pushFailed.Position > 0 {
		f := n.pushFailed
		st.PushFailed = &f
	}
	if n.applied != nil {
		a := *n.applied // a copy: the node's record is overwritten by the next apply; this one gets its summary
		a.Summary = a.Report.Summary()
		if a.HoldsUnknown {
			a.Summary += "; " + HoldsUnknownNote
		}
		st.Applied = &a
	}
	for _, m := range n.modules {
		st.Modules[m] = ModuleStatus{Assigned: true, State: ModulePending}
	}
	for _, m := range n.taken {
		ms := st.Modules[m]
		ms.Taken = true
		st.Modules[m] = ms
	}

	// Sync: the target is the last pushed declaration or, on a node whose
	// stream has no push at all (hand-written), the last composed one.
	target := st.Pushed
	if target == nil {
		target = st.Composed
	}
	switch {
	case n.applied == nil:
		st.Sync = SyncUnreported
	case target == nil || n.applied.Declaration == target.Declaration:
		st.Sync = SyncInSync
	default:
		st.Sync = SyncPending
	}

	// The latest report was refused.
	if r := n.refused; r.Position > 0 && (n.applied == nil || r.Position > n.applied.Position) {
		st.ReportRefused = &r
	}

	// The last compose attempt failed: until a compose succeeds.
	if f, ok := n.lastComposeFailure(); ok {
		st.ComposeFailed = &f
	}

	var failed, held int
	var declared map[string]string // the applied declaration's containers, by name
	if a := n.applied; a != nil {
		st.Held = events.HeldByModule(a.Report.Held)
		held, failed = len(a.Report.Held), len(a.Report.Failed)
		byName := map[string]string{}
		if d, _ := n.decls.peek(a.Declaration); d != nil {
			for _, r := range d.resources {
				byName[r.Name] = r.Module
				if r.Kind == "container" {
					if declared == nil {
						declared = map[string]string{}
					}
					declared[r.Name] = r.Module
				}
			}
			for _, r := range d.resources {
				ms := st.Modules[r.Module]
				if ms.State == "" || ms.State == ModulePending {
					ms.State = HealthConverged
				}
				st.Modules[r.Module] = ms
			}
		}
		for _, f := range a.Report.Failed {
			m, ok := byName[f.Name]
			if !ok {
				continue
			}
			ms := st.Modules[m]
			ms.Failed++
			ms.State = HealthFailing
			st.Modules[m] = ms
		}
		for _, h := range a.Report.Held {
			ms := st.Modules[h.Module]
			ms.Held++
			if ms.State != HealthFailing {
				ms.State = HealthWaitingOnTake
			}
			st.Modules[h.Module] = ms
		}
	}

	n.pendingReasons(&st)
	workload := n.workload(&st, declared)

	st.Churn = s.churn != nil && s.churn.Active(name)
	switch {
	case st.Churn:
		st.Health = HealthChurning
	case failed > 0 || st.ComposeFailed != nil || st.ReportRefused != nil:
		st.Health = HealthFailing
	case workload != "" && workload != HealthStarting:
		st.Health = workload // crash-looping, stopped, unhealthy: never converged
	case n.applied == nil:
		st.Health = HealthUnknown
	case held > 0:
		st.Health = HealthWaitingOnTake
	case workload == HealthStarting:
		st.Health = HealthStarting
	default:
		st.Health = HealthConverged
	}
	return st
}

// pendingReasons gives each module of st still pending (assigned, absent
// from the applied declaration) the reason: the latest compose's failure,
// else the latest composed declaration not applied yet, else no compose
// since it was assigned.
func (n *statusNode) pendingReasons(st *NodeStatus) {
	var latest map[string]bool // modules of the latest composed declaration
	for m, ms := range st.Modules {
		if ms.State != ModulePending {
			continue
		}
		switch {
		case st.ComposeFailed != nil:
			ms.Reason = PendingComposeFailed + st.ComposeFailed.Error
		default:
			if latest == nil {
				latest = map[string]bool{}
				if d, _ := n.decls.peek(n.composed.Declaration); d != nil {
					for _, r := range d.resources {
						latest[r.Module] = true
					}
				}
			}
			if latest[m] {
				ms.Reason = fmt.Sprintf(PendingNotApplied, n.composed.Declaration)
			} else {
				ms.Reason = PendingNotComposed
			}
		}
		st.Modules[m] = ms
	}
}

// DeclarationFacts is what status knows of one of a node's declarations:
// what the report door checks a report against (commands.DeclarationFacts).
type DeclarationFacts struct {
	Composed   bool      // composed for the node
	ComposedAt time.Time // when (its last compose)
	Pushed     bool      // a push of it is recorded (declaration.pushed or declaration.push-failed)
	Latest     bool      // the node's last composed declaration
	Resources  []string  // the names of its resources (a new slice)
	// ResourcesUnknown says its resources could not be read (a reference,
	// resources_since, that named nothing the reader found): Resources is
	// empty, and says nothing.
	ResourcesUnknown bool
	// Declared says whether a resource of that name was in a declaration
	// composed for the node (any, folded so far); nil when status cannot
	// say (a snapshot left older declarations out). Safe to call at any
	// time.
	Declared func(name string) bool
}

// Declaration says what node's stream holds of declaration id, as folded
// so far. A declaration a snapshot left out (Set.Incomplete) reads as not
// composed; the controller folds from position 0.
func (s *Status) Declaration(node, id string) DeclarationFacts {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.nodes[node]
	if !ok {
		return DeclarationFacts{}
	}
	d, ok := n.decls.peek(id)
	if !ok || d == nil {
		return DeclarationFacts{}
	}
	f := DeclarationFacts{Composed: true, ComposedAt: d.at, Pushed: d.pushed, Latest: n.composed.Declaration == id,
		Resources: make([]string, len(d.resources)), ResourcesUnknown: d.unknown}
	for i, r := range d.resources {
		f.Resources[i] = r.Name
	}
	if !n.decls.trimmed {
		f.Declared = func(name string) bool { return s.declared(node, name) }
	}
	return f
}

// declared says whether a declaration composed for node had a resource of
// that name. It reads every declaration of the node: the door asks only of
// what a report says it removed, or failed.
func (s *Status) declared(node, name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.nodes[node]
	if !ok {
		return false
	}
	for _, d := range n.decls.vals {
		if d == nil {
			continue
		}
		for _, r := range d.resources {
			if r.Name == name {
				return true
			}
		}
	}
	return false
}

// Converged reports whether node is converged and in sync: what the step
// "status of X is converged" checks.
func (s *Status) Converged(node string) (bool, error) {
	st, err := s.Of(node)
	if err != nil {
		return false, err
	}
	return st.Health == HealthConverged && st.Sync == SyncInSync, nil
}

// WaitingOnTake reports whether module is waiting on take on node (any of
// its resources held by the last apply), and how many resources are held.
func (s *Status) WaitingOnTake(node, module string) (waiting bool, held int, err error) {
	st, err := s.Of(node)
	if err != nil {
		return false, 0, err
	}
	ms := st.Modules[module]
	return ms.Held > 0, ms.Held, nil
}

// MarshalJSON writes every node's status as Of returns it, nodes sorted.
func (s *Status) MarshalJSON() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]NodeStatus, len(s.nodes))
	for name, n := range s.nodes {
		out[name] = s.of(name, n)
	}
	return marshal(out)
}

// insertSorted returns s with v inserted in order, once.
func insertSorted(s []string, v string) []string {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(slices.Clip(s), i, v)
}

// removeSorted returns s without v.
func removeSorted(s []string, v string) []string {
	i, found := slices.BinarySearch(s, v)
	if !found {
		return s
	}
	return slices.Delete(slices.Clone(s), i, i+1)
}

// Status in a snapshot (snapshot.go has the file format, its version and
// the shared tables): a change to what follows, in shape or meaning, needs
// a new snapshotVersion.

type statusSnap struct {
	Nodes   map[string]statusNodeSnap
	Reports reportsSnap
}

type statusNodeSnap struct {
	Modules, Taken []string
	Adopted        bool
	Composed       DeclMark
	ComposeFailed  ComposeFailure
	Pushed         DeclMark
	PushFailed     PushFailure
	Refused        ReportRefusal
	Applied        *ApplyRecord
	Decls          declSnap[declSnapVal]
	Containers     map[string]ContainerStatus `json:",omitempty"`
	Followed       bool                       `json:",omitempty"`
}

type declSnapVal struct {
	Digest    string
	Resources int
	At        time.Time
	Pushed    bool `json:",omitempty"`
	Unknown   bool `json:",omitempty"` // its resources could not be read (decl.unknown)
}

func (s *Status) save(t *tables) *statusSnap {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := &statusSnap{Nodes: make(map[string]statusNodeSnap, len(s.nodes)), Reports: s.reports.save()}
	for _, name := range slices.Sorted(maps.Keys(s.nodes)) {
		n := s.nodes[name]
		var applied *ApplyRecord
		if n.applied != nil {
			a := *n.applied // a copy: the next apply overwrites the node's
			applied = &a
		}
		out.Nodes[name] = statusNodeSnap{
			Modules: n.modules, Taken: n.taken, Adopted: n.adopted, Composed: n.composed,
			ComposeFailed: n.composeFailed, Pushed: n.pushed, PushFailed: n.pushFailed, Refused: n.refused, Applied: applied,
			Decls: saveDecls(&n.decls, func(d *decl) declSnapVal {
				return declSnapVal{Digest: d.digest, Resources: t.resources(d.resources), At: d.at, Pushed: d.pushed, Unknown: d.unknown}
			}, appliedDecl(n), n.pushed.Declaration),
			Containers: n.containers, Followed: n.followed,
		}
	}
	return out
}

func (s *Status) load(sn *statusSnap, st *snapState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = make(map[string]*statusNode, len(sn.Nodes))
	for name, n := range sn.Nodes {
		s.nodes[name] = &statusNode{
			modules: n.Modules, taken: n.Taken, adopted: n.Adopted, composed: n.Composed,
			composeFailed: n.ComposeFailed, pushed: n.Pushed, pushFailed: n.PushFailed, refused: n.Refused, applied: n.Applied,
			decls: loadDecls(n.Decls, func(d declSnapVal) *decl {
				return &decl{digest: d.Digest, resources: st.res(d.Resources), at: d.At, pushed: d.Pushed, unknown: d.Unknown}
			}),
			containers: n.Containers, followed: n.Followed,
		}
	}
	s.reports.load(sn.Reports)
}

func appliedDecl(n *statusNode) string {
	if n.applied == nil {
		return ""
	}
	return n.applied.Report.Declaration
}
