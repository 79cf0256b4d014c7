package projections

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"meshplane/events"
)

// Churn detects churn loops and declaration flips per node (docs/design.md rule
// 7, seed 000), from the event stream alone.
//
//   - A pass (apply.reported) is heavy by rule 7's one function,
//     events.Heavy: it created, replaced or removed at least half of its
//     declaration's resources, or of its containers (a container created
//     after the node's last apply failed it is a retry, not counted). The
//     node's history it needs (which names are containers, what the last
//     apply failed) is an events.PassHistory.
//   - Two heavy passes in a row on a node with no operator command in between
//     are a churn loop, detected at the second.
//   - A declaration digest that alternates A→B→A on a node, with no operator
//     command between the two changes, is a flip, detected at the second
//     change.
//
// An operator command on a node is an event on the node's stream whose actor
// is "operator:<name>", any assign, release, take, setting, adoption or
// registration naming the node (whatever its actor: hand-written events may
// carry none), or a module.defined or artifact.recorded of a module assigned
// to the node.
//
// A loop or flip opens an episode, which gathers evidence (which
// declarations, which replaced fields, which failed reads) until two quiet
// (not heavy) passes in a row close it. A flip seen meanwhile restarts the
// count. Closed episodes stay in the node's history.
type Churn struct {
	mu       sync.RWMutex
	nodes    map[string]*churnNode
	assigned map[string]map[string]bool // module → nodes it is assigned to
}

// churnNode is one node's detector state. Invariant: active is -1 or the
// index of the last episode, the one that is open.
type churnNode struct {
	Episodes []Episode `json:"episodes"`
	active   int

	streak      int      // heavy passes in a row since the last quiet pass or operator command
	streakStart Mark     // the first of them
	quiet       int      // quiet passes in a row while an episode is open
	pending     Evidence // gathered since the last quiet pass, before any episode opened

	cur, prev           string // current declaration digest, and the one before it
	curDecl, prevDecl   string
	curPos, prevPos     uint64
	curRoster, prevRost []string
	changed             Mark // the last change of digest
	opSinceChange       bool

	decls declIndex[declFacts] // declaration id → digest and size
	hist  events.PassHistory   // the container names and last failures Heavy needs
}

type declFacts struct {
	digest     string
	resources  int
	containers int // of the resources, containers
}

// Mark is a point in the stream.
type Mark struct {
	Position uint64    `json:"position"`
	At       time.Time `json:"at"`
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

// Evidence is what an episode saw.
type Evidence struct {
	// Declarations are the distinct declarations of the episode's passes
	// and flips, in the order first seen; at most maxEvidence, the rest
	// counted in MoreDeclarations.
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

// maxEvidence bounds the lists of Evidence, so a long episode stays small.
const maxEvidence = 32

var _ Projection = (*Churn)(nil)

// NewChurn returns an empty churn projection.
func NewChurn() *Churn {
	return &Churn{nodes: map[string]*churnNode{}, assigned: map[string]map[string]bool{}}
}

// Name is "churn".
func (c *Churn) Name() string { return "churn" }

// Reset forgets everything.
func (c *Churn) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes = map[string]*churnNode{}
	c.assigned = map[string]map[string]bool{}
}

func (c *Churn) node(name string) *churnNode {
	n := c.nodes[name]
	if n == nil {
		n = &churnNode{active: -1}
		c.nodes[name] = n
	}
	return n
}

// Fold feeds one event to the detector.
func (c *Churn) Fold(ev events.Event, p events.Payload) error {
	return c.fold(&ev, p, nodeOf(ev, p))
}

// fold is Fold of an event concerning node (nodeOf).
func (c *Churn) fold(ev *events.Event, p events.Payload, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch v := p.(type) {
	case events.ModuleDefined:
		c.operatorOnModule(v.Module)
		return nil
	case events.ArtifactRecorded:
		c.operatorOnModule(v.Module)
		return nil
	case events.ModuleDeployed:
		c.operatorOnModule(v.Module)
		return nil
	case events.ModuleAssigned:
		if c.assigned[v.Module] == nil {
			c.assigned[v.Module] = map[string]bool{}
		}
		c.assigned[v.Module][v.Node] = true
	case events.ModuleReleased:
		delete(c.assigned[v.Module], v.Node)
	}
	if node == "" {
		switch p.(type) {
		case events.DeclarationComposed, events.DeclarationComposeFailed, events.ApplyReported:
			return unattributed(c.Name(), *ev)
		}
		return nil
	}
	if _, ok := p.(events.NodeRemoved); ok {
		// Its episodes go with it: a node registered again under its name
		// starts with none.
		delete(c.nodes, node)
		for _, nodes := range c.assigned {
			delete(nodes, node)
		}
		return nil
	}
	n := c.node(node)
	switch v := p.(type) {
	case events.NodeRegistered, events.NodeAdopted, events.NodeSettingSet,
		events.ModuleAssigned, events.ModuleReleased, events.ModuleTaken:
		n.operator()
	case events.DeclarationComposed:
		c.composed(n, node, ev, &v)
	case events.DeclarationComposeFailed:
		n.evidence().addFailedRead(v, ev.Position)
	case events.ApplyReported:
		c.applied(n, node, ev, &v)
	default:
		if strings.HasPrefix(ev.Actor, "operator:") && streamNode(ev.Stream) == node {
			n.operator()
		}
	}
	return nil
}

// operatorOnModule marks an operator command on every node the module is
// assigned to.
func (c *Churn) operatorOnModule(module string) {
	for node := range c.assigned[module] {
		c.node(node).operator()
	}
}

// operator records an operator command on the node: a heavy pass after it
// starts a new streak, and a digest change after it is not half of a flip.
func (n *churnNode) operator() {
	n.streak = 0
	n.opSinceChange = true
	if n.active < 0 {
		n.pending = Evidence{}
	}
}

// evidence is where the node's evidence goes now: the open episode's, or the
// pending one.
func (n *churnNode) evidence() *Evidence {
	if n.active >= 0 {
		return &n.Episodes[n.active].Evidence
	}
	return &n.pending
}

func (c *Churn) composed(n *churnNode, node string, ev *events.Event, v *events.DeclarationComposed) {
	facts := declFacts{digest: v.Digest, resources: len(v.Resources), containers: n.hist.Composed(v.Resources)}
	n.decls.add(v.Declaration, facts)
	if n.cur == "" {
		n.cur, n.curDecl, n.curPos, n.curRoster = v.Digest, v.Declaration, ev.Position, v.Roster
		n.changed = Mark{ev.Position, ev.At}
		return
	}
	if v.Digest == n.cur {
		n.curDecl, n.curPos, n.curRoster = v.Declaration, ev.Position, v.Roster
		return
	}
	flip := n.prev != "" && v.Digest == n.prev && !n.opSinceChange
	firstChange := n.changed
	a := DeclRef{Declaration: n.prevDecl, Digest: n.prev, Position: n.prevPos}
	b := DeclRef{Declaration: n.curDecl, Digest: n.cur, Position: n.curPos}
	from := n.curRoster
	n.prev, n.prevDecl, n.prevPos, n.prevRost = n.cur, n.curDecl, n.curPos, n.curRoster
	n.cur, n.curDecl, n.curPos, n.curRoster = v.Digest, v.Declaration, ev.Position, v.Roster
	n.changed = Mark{ev.Position, ev.At}
	n.opSinceChange = false
	if !flip {
		return
	}
	here := Mark{ev.Position, ev.At}
	if n.active < 0 {
		n.open(node, firstChange, here)
	}
	e := &n.Episodes[n.active]
	e.Flip = true
	e.Flips++
	n.quiet = 0
	e.Evidence.addDecl(a)
	e.Evidence.addDecl(b)
	e.Evidence.addDecl(DeclRef{Declaration: v.Declaration, Digest: v.Digest, Position: ev.Position})
	added, removed := diffNames(from, v.Roster)
	e.Evidence.addRoster(added)
	e.Evidence.addRoster(removed)
}

// open starts an episode, taking over the pending evidence.
func (n *churnNode) open(node string, start, detected Mark) {
	ev := n.pending
	if ev.Fields == nil {
		ev.Fields = map[string]int{}
	}
	n.pending = Evidence{}
	n.Episodes = append(n.Episodes, Episode{Node: node, Start: start, Detected: detected, Evidence: ev})
	n.active = len(n.Episodes) - 1
	n.quiet = 0
}

func (c *Churn) applied(n *churnNode, node string, ev *events.Event, v *events.ApplyReported) {
	facts, _ := n.decls.get(v.Declaration)
	digest := v.Digest
	if digest == "" {
		digest = facts.digest
	}
	here := Mark{ev.Position, ev.At}
	if !n.hist.Applied(v, facts.resources, facts.containers) {
		n.streak = 0
		if n.active < 0 {
			n.pending = Evidence{}
			return
		}
		e := &n.Episodes[n.active]
		e.Passes++
		n.quiet++
		if n.quiet >= 2 {
			e.End = &here
			n.active = -1
			n.quiet = 0
		}
		return
	}
	n.quiet = 0
	if n.streak == 0 {
		n.streakStart = here
	}
	n.streak++
	evd := n.evidence()
	evd.addDecl(DeclRef{Declaration: v.Declaration, Digest: digest, Position: ev.Position})
	for _, r := range v.Replaced {
		for _, f := range r.Fields {
			if evd.Fields == nil {
				evd.Fields = map[string]int{}
			}
			evd.Fields[f]++
		}
	}
	if n.active < 0 {
		if n.streak < 2 {
			return
		}
		n.open(node, n.streakStart, here)
		e := &n.Episodes[n.active]
		e.Passes, e.HeavyPasses = n.streak, n.streak
		e.Loop = true
		return
	}
	e := &n.Episodes[n.active]
	e.Passes++
	e.HeavyPasses++
	if n.streak >= 2 {
		e.Loop = true
	}
}

func (e *Evidence) addDecl(d DeclRef) {
	if d.Declaration == "" && d.Digest == "" {
		return
	}
	for _, x := range e.Declarations {
		if x.Declaration == d.Declaration && x.Digest == d.Digest {
			return
		}
	}
	if len(e.Declarations) >= maxEvidence {
		e.MoreDeclarations++
		return
	}
	e.Declarations = append(e.Declarations, d)
}

func (e *Evidence) addFailedRead(v events.DeclarationComposeFailed, pos uint64) {
	for i := range e.FailedReads {
		if e.FailedReads[i].Read == v.Read && e.FailedReads[i].Error == v.Error {
			e.FailedReads[i].Count++
			return
		}
	}
	if len(e.FailedReads) >= maxEvidence {
		return
	}
	e.FailedReads = append(e.FailedReads, FailedRead{Read: v.Read, Error: v.Error, Position: pos, Count: 1})
}

func (e *Evidence) addRoster(names []string) {
	for _, s := range names {
		if i, found := slices.BinarySearch(e.RosterChanged, s); !found && len(e.RosterChanged) < maxEvidence {
			e.RosterChanged = slices.Insert(e.RosterChanged, i, s)
		}
	}
}

func (e Evidence) clone() Evidence {
	e.Declarations = slices.Clone(e.Declarations)
	e.Fields = maps.Clone(e.Fields)
	e.FailedReads = slices.Clone(e.FailedReads)
	e.RosterChanged = slices.Clone(e.RosterChanged)
	return e
}

func (e Episode) clone() Episode {
	if e.End != nil {
		end := *e.End
		e.End = &end
	}
	e.Evidence = e.Evidence.clone()
	return e
}

// Active reports whether a churn episode (loop or flip) is open on node now.
// A node no event has mentioned has none.
func (c *Churn) Active(node string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[node]
	return ok && n.active >= 0
}

// Current returns node's open episode, if any.
func (c *Churn) Current(node string) (Episode, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[node]
	if !ok || n.active < 0 {
		return Episode{}, false
	}
	return n.Episodes[n.active].clone(), true
}

// Nodes lists, sorted, the nodes that have had at least one episode.
func (c *Churn) Nodes() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for n, st := range c.nodes {
		if len(st.Episodes) > 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Episodes returns every episode seen on node, oldest first; an open one is
// last. A node with none, or never mentioned, has an empty history.
func (c *Churn) Episodes(node string) []Episode {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[node]
	if !ok {
		return nil
	}
	out := make([]Episode, len(n.Episodes))
	for i, e := range n.Episodes {
		out[i] = e.clone()
	}
	return out
}

// churnState is the serialized form: the episodes per node (nodes without
// any are left out) and the assignments the detector follows.
type churnState struct {
	Episodes map[string][]Episode `json:"episodes"`
	Assigned map[string][]string  `json:"assigned"`
}

// MarshalJSON writes every node's episodes and the module assignments.
func (c *Churn) MarshalJSON() ([]byte, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := churnState{Episodes: map[string][]Episode{}, Assigned: map[string][]string{}}
	for name, n := range c.nodes {
		if len(n.Episodes) > 0 {
			st.Episodes[name] = n.Episodes
		}
	}
	for m, nodes := range c.assigned {
		if len(nodes) > 0 {
			st.Assigned[m] = slices.Sorted(maps.Keys(nodes))
		}
	}
	return marshal(st)
}

// Churn in a snapshot (snapshot.go has the file format, its version and
// the shared tables): a change to what follows, in shape or meaning, needs
// a new snapshotVersion.

type churnSnap struct {
	Nodes    map[string]churnNodeSnap
	Assigned map[string][]string
}

type churnNodeSnap struct {
	Episodes            []Episode
	Active              int
	Streak              int
	StreakStart         Mark
	Quiet               int
	Pending             Evidence
	Cur, Prev           string
	CurDecl, PrevDecl   string
	CurPos, PrevPos     uint64
	CurRoster, PrevRost int
	Changed             Mark
	OpSinceChange       bool
	Decls               declSnap[declFactsSnap]
	Containers          []string // sorted
	FailedLast          []string // sorted: the containers the node's last apply failed
}

type declFactsSnap struct {
	Digest     string
	Resources  int
	Containers int
}

func (c *Churn) save(t *tables) *churnSnap {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := &churnSnap{Nodes: make(map[string]churnNodeSnap, len(c.nodes)), Assigned: map[string][]string{}}
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		n := c.nodes[name]
		out.Nodes[name] = churnNodeSnap{
			Episodes: n.Episodes, Active: n.active, Streak: n.streak, StreakStart: n.streakStart,
			Quiet: n.quiet, Pending: n.pending, Cur: n.cur, Prev: n.prev, CurDecl: n.curDecl,
			PrevDecl: n.prevDecl, CurPos: n.curPos, PrevPos: n.prevPos,
			CurRoster: t.strings(n.curRoster), PrevRost: t.strings(n.prevRost),
			Changed: n.changed, OpSinceChange: n.opSinceChange,
			Decls: saveDecls(&n.decls, func(d declFacts) declFactsSnap {
				return declFactsSnap{Digest: d.digest, Resources: d.resources, Containers: d.containers}
			}),
			Containers: slices.Sorted(maps.Keys(n.hist.Containers)),
			FailedLast: slices.Sorted(maps.Keys(n.hist.FailedLast)),
		}
	}
	for m, nodes := range c.assigned {
		out.Assigned[m] = slices.Sorted(maps.Keys(nodes))
	}
	return out
}

func (c *Churn) load(s *churnSnap, st *snapState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes = make(map[string]*churnNode, len(s.Nodes))
	for name, sn := range s.Nodes {
		c.nodes[name] = &churnNode{
			Episodes: sn.Episodes, active: sn.Active, streak: sn.Streak, streakStart: sn.StreakStart,
			quiet: sn.Quiet, pending: sn.Pending, cur: sn.Cur, prev: sn.Prev, curDecl: sn.CurDecl,
			prevDecl: sn.PrevDecl, curPos: sn.CurPos, prevPos: sn.PrevPos,
			curRoster: st.strs(sn.CurRoster), prevRost: st.strs(sn.PrevRost),
			changed: sn.Changed, opSinceChange: sn.OpSinceChange,
			decls: loadDecls(sn.Decls, func(d declFactsSnap) declFacts {
				return declFacts{digest: d.Digest, resources: d.Resources, containers: d.Containers}
			}),
		}
		c.nodes[name].hist = loadPassHistory(sn.Containers, sn.FailedLast)
	}
	c.assigned = make(map[string]map[string]bool, len(s.Assigned))
	for m, nodes := range s.Assigned {
		set := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			set[n] = true
		}
		c.assigned[m] = set
	}
}
