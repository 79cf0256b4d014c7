package sim

import (
	"math"
	"slices"

	"meshplane/projections"
)

// Detected is a churn episode the churn projection found, in passes.
type Detected struct {
	Node     string `json:"node"`
	Loop     bool   `json:"loop"`
	Flip     bool   `json:"flip"`
	Start    int    `json:"start"`
	Detected int    `json:"detected"`
	End      int    `json:"end"` // -1 while open
	// True says it overlaps an injected episode, or is a loop of two
	// passes, an operator's (at or just after an operator command on the
	// node) and an injected removal's right after it: rule 7 counts the
	// operator's pass when it is heavy (a first creation, a roll-out), and
	// the truth, which weighs no pass, cannot say it was not (Operator).
	// Legit, for a false one, says it began at or just after an operator
	// command on the node.
	True     bool `json:"true"`
	Operator bool `json:"operator,omitempty"`
	Legit    bool `json:"legit,omitempty"`
}

// Score is the churn projection scored against the truth a run injected.
type Score struct {
	Injected      int `json:"injected"` // truth episodes
	InjectedLoops int `json:"injected_loops"`
	InjectedFlips int `json:"injected_flips"`
	Found         int `json:"found"` // injected episodes the projection detected
	Detections    int `json:"detections"`
	TrueDetected  int `json:"true_detections"`
	// OperatorLoops counts the true detections that are an operator's pass
	// and the injected removal after it (Detected.Operator).
	OperatorLoops int `json:"operator_loops"`
	// Precision is TrueDetected / Detections (1 with no detection); Recall
	// Found / Injected (1 with nothing injected).
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	// Delay is, over the episodes found, the passes from an episode's start
	// to its detection (the rule's best is 1: the second heavy pass, or the
	// return of a flip; 0 for a loop whose first removal came right after
	// an operator's heavy pass, which the rule counts as the first).
	DelayMean float64 `json:"delay_mean"`
	DelayMax  int     `json:"delay_max"`
	// LegitPasses counts node-passes with an operator command on the node
	// (roll-outs, moves, bursts, joins, leaves, takes);
	// FalseLoopsLegit the false loops that began at one of them.
	LegitPasses     int `json:"legit_passes"`
	FalseLoopsLegit int `json:"false_loops_legit"`
	FalseOther      int `json:"false_other"`

	Missed []TruthEpisode `json:"missed,omitempty"`
	False  []Detected     `json:"false,omitempty"`
}

// Met reports whether the score meets the targets: recall 1, no
// false loop on a legitimate pass, a delay of at most 2 passes.
func (s Score) Met() bool { return s.Recall == 1 && s.FalseLoopsLegit == 0 && s.DelayMax <= 2 }

// Detections are the churn projection's episodes, in passes of r.
func (r *Run) Detections(c *projections.Churn) []Detected {
	var out []Detected
	for _, node := range c.Nodes() {
		for _, e := range c.Episodes(node) {
			d := Detected{Node: node, Loop: e.Loop, Flip: e.Flip, Start: r.PassOf(e.Start.Position), Detected: r.PassOf(e.Detected.Position), End: -1}
			if e.End != nil {
				d.End = r.PassOf(e.End.Position)
			}
			out = append(out, d)
		}
	}
	return out
}

// Score scores detections against r's truth.
func (r *Run) Score(detected []Detected) Score {
	return score(r.Truth(), detected, r.legit, r.truth.removals())
}

func overlaps(d Detected, t TruthEpisode) bool {
	end := d.End
	if end < 0 {
		end = math.MaxInt
	}
	return d.Node == t.Node && d.Detected <= t.End+2 && end >= t.Start
}

// afterOperator reports whether d is a loop of an operator's pass and the
// injected removal right after it (Detected.Operator): detected at a pass
// the node applied after a removal, begun the pass before, at or just after
// an operator command on the node (legit: its passes with one).
func afterOperator(d Detected, legit, removals []int) bool {
	return d.Loop && d.Start == d.Detected-1 && slices.Contains(removals, d.Detected) &&
		(slices.Contains(legit, d.Start) || slices.Contains(legit, d.Start-1))
}

// score scores detected against truth; legit and removals are, per node,
// the passes with an operator command on it and those it applied after a
// removal.
func score(truth []TruthEpisode, detected []Detected, legit, removals map[string][]int) Score {
	s := Score{Injected: len(truth), Detections: len(detected)}
	for _, ps := range legit {
		s.LegitPasses += len(ps)
	}
	var delays int
	for _, t := range truth {
		if t.Loop {
			s.InjectedLoops++
		}
		if t.Flip {
			s.InjectedFlips++
		}
		best := -1
		for _, d := range detected {
			if overlaps(d, t) {
				delay := max(d.Detected, t.Start) - t.Start
				if best < 0 || delay < best {
					best = delay
				}
			}
		}
		if best < 0 {
			s.Missed = append(s.Missed, t)
			continue
		}
		s.Found++
		delays += best
		s.DelayMax = max(s.DelayMax, best)
	}
	for i, d := range detected {
		for _, t := range truth {
			if overlaps(d, t) {
				d.True = true
				break
			}
		}
		if !d.True && afterOperator(d, legit[d.Node], removals[d.Node]) {
			d.True, d.Operator = true, true
			s.OperatorLoops++
		}
		if d.True {
			s.TrueDetected++
		} else {
			ps := legit[d.Node]
			// Legitimate: an operator command on the node at the episode's
			// start or the pass before.
			d.Legit = slices.Contains(ps, d.Start) || slices.Contains(ps, d.Start-1)
			if d.Loop && d.Legit {
				s.FalseLoopsLegit++
			} else {
				s.FalseOther++
			}
			s.False = append(s.False, d)
		}
		detected[i] = d
	}
	s.Precision, s.Recall = 1, 1
	if s.Detections > 0 {
		s.Precision = float64(s.TrueDetected) / float64(s.Detections)
	}
	if s.Injected > 0 {
		s.Recall = float64(s.Found) / float64(s.Injected)
	}
	if s.Found > 0 {
		s.DelayMean = float64(delays) / float64(s.Found)
	}
	return s
}
