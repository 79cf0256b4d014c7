package sim

import (
	"cmp"
	"slices"
	"strings"
)

// TruthEpisode is churn the run injected on a node: what the churn
// projection should find. Passes count from 1. The truth is worked out from
// what the run did (which node, which passes, which fault, which operator
// commands), never from the events the detector reads: a detector, a rule
// (events.Heavy) or a push that went wrong shows as a miss or a false
// detection, not as agreement.
//
//   - A loop: two passes in a row or more on a node, with no operator
//     command on the node between them, before each of which something
//     outside removed the node's containers (a remove fault removed at
//     least one) and in each of which the node applied what it holds. Such
//     a pass recreates every container the node runs: seed 000's churn,
//     whatever the rule's arithmetic. Start is the first of them: the rule
//     detects it at the second, Start+1.
//   - A flip: the node's declaration, as the run composed it, went A→B→A,
//     where a declaration is what the run gave it to compose from: the
//     operator commands on the node so far, the roster-changing commands
//     anywhere so far (an assign, a release, a registration, a setting),
//     and which other nodes with a module were read lossily (seed 000's
//     swallowed error). Only a lossy read comes and goes, so only it can
//     make A return with no command between. Passes whose composes all
//     fail (a store in recovery) compose nothing. Start is the node's
//     compose before the return: the rule detects it at the return.
//
// An episode ends at its last such pass; two passes without one close it.
type TruthEpisode struct {
	Node  string `json:"node"`
	Loop  bool   `json:"loop"`
	Flip  bool   `json:"flip"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// composedState is what a node's declaration is composed from, as far as
// the run can tell (see TruthEpisode): equal states compose equal
// declarations.
type composedState struct {
	own   int    // operator commands on the node so far
	epoch int    // roster-changing operator commands anywhere so far
	lossy string // the other nodes with a module read lossily, sorted, joined
}

type truthNode struct {
	streak, streakStart int   // passes in a row after a removal (see TruthEpisode)
	removals            []int // every pass the node applied after a removal
	own                 int   // operator commands on the node so far

	cur, prev   composedState // the last two distinct states composed
	composed    int           // composes so far: cur is set from 1, prev from the first change
	hasPrev     bool
	lastCompose int // the pass of the last compose

	open        *TruthEpisode
	lastSymptom int
	closed      []TruthEpisode
}

type truthKeeper struct {
	nodes map[string]*truthNode
	epoch int // roster-changing operator commands so far
}

func (t *truthKeeper) init() { t.nodes = map[string]*truthNode{} }

func (t *truthKeeper) node(name string) *truthNode {
	n := t.nodes[name]
	if n == nil {
		n = &truthNode{}
		t.nodes[name] = n
	}
	return n
}

// operator records an operator command on node ("" for none in
// particular); roster says it may change every node's roster.
func (t *truthKeeper) operator(node string, roster bool) {
	if roster {
		t.epoch++
	}
	if node == "" {
		return
	}
	n := t.node(node)
	n.streak = 0
	n.own++
}

// pass records node's pass p; removed says a remove fault removed
// containers of the node before it and the node applied.
func (t *truthKeeper) pass(node string, p int, removed bool) {
	n := t.node(node)
	if !removed {
		n.streak = 0
		return
	}
	n.removals = append(n.removals, p)
	if n.streak == 0 {
		n.streakStart = p
	}
	n.streak++
	if n.streak >= 2 {
		t.symptom(n, node, p, n.streakStart, true, false)
	}
}

// composed records that node's declaration was composed at pass p with the
// other nodes in lossy (sorted; those with a module) read lossily.
func (t *truthKeeper) composed(node string, p int, lossy []string) {
	n := t.node(node)
	s := composedState{own: n.own, epoch: t.epoch, lossy: strings.Join(lossy, ",")}
	switch {
	case n.composed == 0:
		n.cur = s
	case s != n.cur:
		if n.hasPrev && s == n.prev {
			t.symptom(n, node, p, n.lastCompose, false, true)
		}
		n.prev, n.hasPrev, n.cur = n.cur, true, s
	}
	n.composed++
	n.lastCompose = p
}

func (t *truthKeeper) symptom(n *truthNode, node string, p, start int, loop, flip bool) {
	if n.open == nil {
		n.open = &TruthEpisode{Node: node, Start: start}
	}
	n.open.Loop = n.open.Loop || loop
	n.open.Flip = n.open.Flip || flip
	n.open.End = p
	n.lastSymptom = p
}

// endPass closes the episodes of nodes two passes quiet.
func (t *truthKeeper) endPass(p int) {
	for _, n := range t.nodes {
		if n.open != nil && n.lastSymptom <= p-2 {
			n.closed = append(n.closed, *n.open)
			n.open = nil
		}
	}
}

func (t *truthKeeper) all() []TruthEpisode {
	var out []TruthEpisode
	for _, n := range t.nodes {
		out = append(out, n.closed...)
		if n.open != nil {
			out = append(out, *n.open)
		}
	}
	slices.SortFunc(out, func(a, b TruthEpisode) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Start, b.Start))
	})
	return out
}

// removals returns, per node, the passes it applied after a removal.
func (t *truthKeeper) removals() map[string][]int {
	out := map[string][]int{}
	for name, n := range t.nodes {
		if len(n.removals) > 0 {
			out[name] = slices.Clone(n.removals)
		}
	}
	return out
}
