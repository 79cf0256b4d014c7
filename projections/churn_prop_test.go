package projections

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"meshplane/events"
)

// Property tests of the churn fold (docs/design.md rule 7) over drawn histories
// of two nodes: compositions flipping between three digests, applies of
// any weight (of the current declaration, an earlier one, or one never
// composed), failures, operator commands on the node and on its modules. A
// pass is heavy by rule 7's one function, events.Heavy, weighed here with
// the test's own events.PassHistory of each node.

// churnHistory draws and folds a history, checking after every event.
type churnHistory struct {
	t     *rapid.T
	reg   *events.Registry
	churn *Churn
	pos   uint64

	// What the test knows of each node, to weigh its passes.
	nodes    map[string]*churnOracle
	assigned map[string]map[string]bool // module → nodes
}

type churnOracle struct {
	hist   events.PassHistory
	decls  map[string]declFacts // declaration id → its size
	last   string               // the last declaration composed
	n      int                  // declarations composed
	streak int                  // heavy passes since the last quiet pass or operator command
}

func newChurnHistory(t *rapid.T) *churnHistory {
	h := &churnHistory{t: t, reg: events.NewRegistry(), churn: NewChurn(), nodes: map[string]*churnOracle{}, assigned: map[string]map[string]bool{}}
	for _, n := range []string{"n0", "n1"} {
		h.nodes[n] = &churnOracle{decls: map[string]declFacts{}}
	}
	return h
}

// fold makes the event as a store would hold it, decodes it as the runner
// does, and folds it.
func (h *churnHistory) fold(stream, actor string, p events.Payload) {
	h.pos++
	ev, err := h.reg.New(stream, p, events.Meta{ID: id(h.pos), At: t0.Add(time.Duration(h.pos) * time.Minute), Actor: actor})
	if err != nil {
		h.t.Fatalf("new %s: %v", p.EventType(), err)
	}
	ev.Position = h.pos
	decoded, err := h.reg.Decode(ev)
	if err != nil {
		h.t.Fatalf("decode %s: %v", ev, err)
	}
	if err := h.churn.Fold(ev, decoded); err != nil {
		h.t.Fatalf("fold %s: %v", ev, err)
	}
}

// operator is an operator command on node, reaching it through the node's
// stream or one of its modules.
func (h *churnHistory) operator(node string) {
	o := h.nodes[node]
	switch rapid.IntRange(0, 3).Draw(h.t, "operator command") {
	case 0:
		m := fmt.Sprintf("m%d", rapid.IntRange(0, 1).Draw(h.t, "module"))
		if h.assigned[m] == nil {
			h.assigned[m] = map[string]bool{}
		}
		h.assigned[m][node] = true
		h.fold(events.NodeStream(node), "operator:jo", events.ModuleAssigned{Module: m, Node: node})
	case 1:
		m := fmt.Sprintf("m%d", rapid.IntRange(0, 1).Draw(h.t, "module"))
		delete(h.assigned[m], node)
		h.fold(events.NodeStream(node), "operator:jo", events.ModuleReleased{Module: m, Node: node})
	case 2:
		h.fold(events.NodeStream(node), "operator:jo", events.NodeSettingSet{Node: node, Key: events.SettingPortPrefix + "store", Value: "6852"})
	case 3:
		m := fmt.Sprintf("m%d", rapid.IntRange(0, 1).Draw(h.t, "module"))
		h.fold(events.ModuleStream(m), "operator:jo", events.ModuleDefined{Module: m})
		for n := range h.assigned[m] {
			h.nodes[n].streak = 0
		}
		return
	}
	o.streak = 0
}

// compose is a declaration composed for node: up to 6 resources of three
// kinds, its digest one of three, so that digests flip.
func (h *churnHistory) compose(node string) {
	o := h.nodes[node]
	o.n++
	decl := fmt.Sprintf("%s/%d", node, o.n)
	var res []events.ResourceRef
	for i := range rapid.IntRange(0, 6).Draw(h.t, "resources") {
		kind := rapid.SampledFrom([]string{"container", "container", "directory", "file"}).Draw(h.t, "kind")
		res = append(res, events.ResourceRef{Name: fmt.Sprintf("r%d", i), Kind: kind, Module: "m0", Digest: "sha256:" + kind})
	}
	digest := rapid.SampledFrom([]string{"A", "B", "C"}).Draw(h.t, "digest")
	o.decls[decl] = declFacts{digest: digest, resources: len(res), containers: o.hist.Composed(res)}
	o.last = decl
	roster := []string{"a.internal"}
	if digest == "B" {
		roster = append(roster, "b.internal")
	}
	h.fold(events.NodeStream(node), "controller", events.DeclarationComposed{Node: node, Declaration: decl, Digest: digest, Roster: roster, Resources: res})
}

// apply is an apply report of node, of its last declaration, an earlier
// one or one never composed, each resource drawn unchanged, created,
// replaced or failed, and containers removed. With quiet set, a pass that
// would be heavy is lightened, a change at a time, until it is not.
// It returns whether the pass is heavy.
func (h *churnHistory) apply(node string, quiet bool) bool {
	o := h.nodes[node]
	decl := o.last
	switch rapid.IntRange(0, 5).Draw(h.t, "declaration applied") {
	case 0:
		decl = fmt.Sprintf("%s/%d", node, rapid.IntRange(1, max(o.n, 1)).Draw(h.t, "earlier"))
	case 1:
		decl = node + "/99" // never composed
	}
	facts, known := o.decls[decl]
	a := events.ApplyReported{Node: node, Declaration: decl}
	n := facts.resources
	if !known {
		n = rapid.IntRange(0, 6).Draw(h.t, "resources sent")
	}
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		switch rapid.IntRange(0, 4).Draw(h.t, "outcome") {
		case 0, 1:
			a.Unchanged++
		case 2:
			a.Created = append(a.Created, name)
		case 3:
			a.Replaced = append(a.Replaced, events.Replaced{Name: name, Fields: []string{rapid.SampledFrom([]string{"image", "env.PORT", "mounts./data"}).Draw(h.t, "field")}})
		case 4:
			a.Failed = append(a.Failed, events.Failed{Name: name, Error: "injected"})
		}
	}
	for i := range rapid.IntRange(0, 2).Draw(h.t, "removed") {
		a.Removed = append(a.Removed, fmt.Sprintf("old%d", i))
	}
	if rapid.IntRange(0, 4).Draw(h.t, "sent by hand") > 0 {
		a.Sent = n // else 0, as a report written by hand says
	}
	a.Applied = n - len(a.Failed)
	heavy := func() bool {
		return events.Heavy(&a, events.PassContext{Resources: facts.resources, Containers: facts.containers, ContainerNames: o.hist.Containers, FailedBefore: o.hist.FailedLast})
	}
	for quiet && heavy() {
		switch {
		case len(a.Removed) > 0:
			a.Removed = a.Removed[:len(a.Removed)-1]
		case len(a.Replaced) > 0:
			a.Replaced = a.Replaced[:len(a.Replaced)-1]
			a.Unchanged++
		case len(a.Created) > 0:
			a.Created = a.Created[:len(a.Created)-1]
			a.Unchanged++
		default:
			h.t.Fatalf("a pass with no change is heavy: %+v", a)
		}
	}
	heavyPass := o.hist.Applied(&a, facts.resources, facts.containers)
	if heavyPass {
		o.streak++
	} else {
		o.streak = 0
	}
	h.fold(events.NodeStream(node), "agent:"+node, a)
	return heavyPass
}

// step draws one event of the history and folds it.
func (h *churnHistory) step(quiet bool) (node string, heavy bool) {
	node = rapid.SampledFrom([]string{"n0", "n1"}).Draw(h.t, "node")
	switch rapid.IntRange(0, 9).Draw(h.t, "event") {
	case 0, 1, 2:
		h.compose(node)
	case 3, 4, 5, 6:
		heavy = h.apply(node, quiet)
	case 7:
		h.fold(events.NodeStream(node), "controller", events.DeclarationComposeFailed{Node: node, Read: "node n1", Error: "injected"})
	default:
		h.operator(node)
	}
	return node, heavy
}

// Property: a pass sequence with no heavy pass never opens a loop. Flips
// may open episodes; none of them is a loop or counts a heavy pass.
func TestChurnNoHeavyPassNeverOpensALoopProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newChurnHistory(t)
		for range rapid.IntRange(1, 60).Draw(t, "events") {
			node, heavy := h.step(true)
			if heavy {
				t.Fatalf("a lightened pass on %s is heavy", node)
			}
			for _, n := range []string{"n0", "n1"} {
				if i := slices.IndexFunc(h.churn.Episodes(n), func(e Episode) bool { return e.Loop || e.HeavyPasses > 0 }); i >= 0 {
					t.Fatalf("no pass was heavy, yet %s has a loop: %+v", n, h.churn.Episodes(n)[i])
				}
			}
		}
	})
}

// Property, the other way: two heavy passes in a row on a node with no
// operator command in between (and no quiet pass) leave a loop open on it.
func TestChurnTwoHeavyPassesOpenALoopProperty(t *testing.T) {
	loops := 0
	rapid.Check(t, func(t *rapid.T) {
		h := newChurnHistory(t)
		for range rapid.IntRange(1, 60).Draw(t, "events") {
			node, heavy := h.step(false)
			if !heavy || h.nodes[node].streak < 2 {
				continue
			}
			loops++
			if e, ok := h.churn.Current(node); !ok || !e.Loop {
				t.Fatalf("%d heavy passes in a row on %s, and no loop open: %+v (open %v)", h.nodes[node].streak, node, e, ok)
			}
		}
	})
	if loops == 0 {
		t.Errorf("no drawn history had two heavy passes in a row: the property was never tested")
	}
}
