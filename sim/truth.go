package sim

import (
	"cmp"
	"slices"

	"meshplane/events"
)

// TruthEpisode is churn the run injected on a node: what the churn
// projection should find. Passes count from 1.
//
//   - A loop: two passes in a row or more, each of which the node applied,
//     with no operator command on the node between them, each either after
//     something outside removed the node's containers, or (the first only)
//     the pass that carries an operator command and is heavy by rule 7 (a
//     first creation, a roll-out, a moved module: it changed at least half
//     of the declaration's resources or of its containers). Rule 7 counts
//     the operator's heavy pass: a disturbance right after it makes a loop.
//     Start is the first of them: the rule detects it at the second,
//     Start+1.
//   - A flip: the node's declaration went A→B→A with B or A composed from
//     a lossy read (seed 000), and no operator command that could change
//     the declaration (one on the node, or one that changes the mesh's
//     roster: an assign, a release, a registration, a setting) between the
//     two changes. Start is the node's compose before the return: the rule
//     detects it at the return, the next compose.
//
// An episode ends at its last such pass; two passes without one close it.
type TruthEpisode struct {
	Node  string `json:"node"`
	Loop  bool   `json:"loop"`
	Flip  bool   `json:"flip"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// truthPass is what the run saw of one node's pass.
type truthPass struct {
	digest  string // the declaration composed ("" when the compose failed)
	lossy   bool   // composed from a lossy read
	removed bool   // containers were removed before it, and it applied
	applied bool   // the node applied a declaration

	outcome   events.ApplyReported // the apply's report, when applied
	resources []events.ResourceRef // the declaration's resources
}

type truthNode struct {
	streak, streakStart int                // heavy passes in a row (see TruthEpisode)
	opPass              bool               // an operator command on the node since its last apply
	hist                events.PassHistory // what rule 7 weighs the node's applies with

	cur, prev      string
	curLossy       bool
	opSince        bool // an operator command on the node since the last change
	epoch          int  // the mesh's roster epoch at the last change
	lastCompose    int  // the pass of the last successful compose
	open           *TruthEpisode
	lastSymptom    int
	episodesClosed []TruthEpisode
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
	n.opSince = true
	n.opPass = true
}

func (t *truthKeeper) pass(node string, p int, tp truthPass) {
	n := t.node(node)
	containers := n.hist.Composed(tp.resources)
	carries := n.opPass && tp.applied
	heavy := tp.applied && n.hist.Applied(&tp.outcome, len(tp.resources), containers)
	if tp.applied {
		n.opPass = false
	}
	switch {
	case tp.removed:
		if n.streak == 0 {
			n.streakStart = p
		}
		n.streak++
		if n.streak >= 2 {
			t.symptom(n, node, p, n.streakStart, true, false)
		}
	case carries && heavy:
		// The operator's own heavy pass: a first in a row, never a second
		// (the command stands between it and the pass before).
		n.streak, n.streakStart = 1, p
	default:
		n.streak = 0
	}
	if tp.digest == "" {
		return
	}
	switch {
	case n.cur == "":
		n.cur, n.curLossy, n.epoch, n.opSince = tp.digest, tp.lossy, t.epoch, false
	case tp.digest != n.cur:
		flip := n.prev != "" && tp.digest == n.prev && !n.opSince && n.epoch == t.epoch && (tp.lossy || n.curLossy)
		if flip {
			t.symptom(n, node, p, n.lastCompose, false, true)
		}
		n.prev, n.cur, n.curLossy, n.epoch, n.opSince = n.cur, tp.digest, tp.lossy, t.epoch, false
	default:
		n.curLossy = n.curLossy || tp.lossy
	}
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
			n.episodesClosed = append(n.episodesClosed, *n.open)
			n.open = nil
		}
	}
}

func (t *truthKeeper) all() []TruthEpisode {
	var out []TruthEpisode
	for _, n := range t.nodes {
		out = append(out, n.episodesClosed...)
		if n.open != nil {
			out = append(out, *n.open)
		}
	}
	slices.SortFunc(out, func(a, b TruthEpisode) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Start, b.Start))
	})
	return out
}
