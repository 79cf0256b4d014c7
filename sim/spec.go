package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSpec marks every error of ParseFaults: the fault SPEC is malformed.
var ErrSpec = errors.New("fault spec")

// FaultKind is what a fault does.
type FaultKind string

// The kinds of fault a SPEC names (SpecHelp documents them).
const (
	FaultReads   FaultKind = "reads"   // store reads of the chosen nodes' streams fail (seed 000, the store in recovery)
	FaultLossy   FaultKind = "lossy"   // a read of the chosen nodes is answered as "no modules" (seed 000's swallowed error)
	FaultCut     FaultKind = "cut"     // the bus to the chosen nodes is cut
	FaultRemove  FaultKind = "remove"  // something outside removes every container on the chosen nodes before each pass
	FaultJoin    FaultKind = "join"    // new nodes join (register, settings, modules) during the window
	FaultLeave   FaultKind = "leave"   // chosen nodes leave (every module released, no more passes) during the window
	FaultBurst   FaultKind = "burst"   // operators assign a module to the chosen nodes (and take it on adopted ones), each pass of the window
	FaultMove    FaultKind = "move"    // modules move to another node (release, assign) during the window
	FaultRollout FaultKind = "rollout" // every module gets a new image at the window's first pass: a full roll-out
	FaultAdopt   FaultKind = "adopt"   // the chosen nodes are adopted with their first module's data found on disk; taken after the window
	// FaultCrash: every container of the chosen nodes exits at every start
	// through the window (a crash loop: the workload's, never churn).
	FaultCrash FaultKind = "crash"
	// FaultUnhealthy: every container of the chosen nodes fails its health
	// check through the window.
	FaultUnhealthy FaultKind = "unhealthy"
)

var faultKinds = []FaultKind{FaultReads, FaultLossy, FaultCut, FaultRemove, FaultJoin, FaultLeave, FaultBurst, FaultMove, FaultRollout, FaultAdopt, FaultCrash, FaultUnhealthy}

// Fault is one fault of a SPEC: what, on how many nodes, when.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Rate is the share of nodes it acts on (0 < Rate <= 1), or, when
	// Count is set, 0.
	Rate float64 `json:"rate,omitempty"`
	// Count is how many nodes (or, for move, modules) it acts on; 0 when
	// Rate says.
	Count int `json:"count,omitempty"`
	// From and To are the window: passes From to To, inclusive, counted
	// from 1. To 0 is the last pass of the run.
	From int `json:"from"`
	To   int `json:"to,omitempty"`
	// Every is 1 (every pass of the window) or 2 (every other pass,
	// starting with From), for reads and lossy.
	Every int `json:"every,omitempty"`
}

// String is f in SPEC form; ParseFaults reads it back.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	b.WriteString(":")
	switch {
	case f.Kind == FaultRollout:
	case f.Count > 0:
		fmt.Fprintf(&b, "count=%d,", f.Count)
	case f.Rate > 0:
		b.WriteString("rate=" + strconv.FormatFloat(f.Rate, 'g', -1, 64) + ",")
	}
	switch {
	case f.To == f.From:
		fmt.Fprintf(&b, "passes=%d", f.From)
	case f.To > 0:
		fmt.Fprintf(&b, "passes=%d-%d", f.From, f.To)
	default:
		fmt.Fprintf(&b, "passes=%d-", f.From)
	}
	if f.Every > 1 {
		fmt.Fprintf(&b, ",every=%d", f.Every)
	}
	return b.String()
}

// Active reports whether pass p (from 1) is in f's window of a run of
// passes passes.
func (f Fault) Active(p, passes int) bool {
	return p >= f.From && p <= f.end(passes)
}

func (f Fault) end(passes int) int {
	if f.To == 0 {
		return passes
	}
	return min(f.To, passes)
}

// Hits reports whether f acts at pass p: in the window and, every other
// pass, on the window's 1st, 3rd, ... pass.
func (f Fault) Hits(p, passes int) bool {
	return f.Active(p, passes) && (f.Every <= 1 || (p-f.From)%f.Every == 0)
}

// SpecHelp documents the fault SPEC language (mesh sim --help).
const SpecHelp = `A fault SPEC is faults separated by ';', each KIND or KIND:KEY=VALUE,...

  KIND      what it does
  reads     store reads of the chosen nodes' streams fail, as a store in crash
            recovery refuses connections (seed 000): every compose that reads
            them fails and is recorded; nothing is pushed. Not churn.
  lossy     a read of the chosen nodes is answered as "no modules", as the
            swallowed error of seed 000 did: their names leave every other
            node's roster. With every=2, rosters flip: injected flips.
  cut       the bus to the chosen nodes is cut: pushes fail and are recorded,
            reports wait in the agent's outbox until the window ends. Not churn.
  remove    something outside removes every container on the chosen nodes
            before each pass: injected churn loops.
  join      new nodes (rate or count of --nodes) register, get settings and
            modules, at passes spread over the window. Legitimate.
  leave     the chosen nodes leave: every module released, no more passes.
  burst     operators assign a module to the chosen nodes (and take it on an
            adopted node) at each pass of the window. Legitimate.
  move      modules (count, or rate of --modules) move to another node at
            passes spread over the window: release, assign. Legitimate.
  rollout   every module gets a new image at the window's first pass: every
            node replaces its containers once (a full roll-out). Legitimate.
  adopt     the chosen nodes are adopted at set-up with their first module's
            data found on disk (seed 002): held; taken after the window.
  crash     every container of the chosen nodes exits with code 1 at every
            start, from the end of the window's first pass to the end of its
            last (the engine restarts it): their agents follow their
            containers and report one crash loop each. The workload's: not
            churn.
  unhealthy every container of the chosen nodes fails its health check
            through the window, as crash does: not churn.

  KEY       value
  rate      share of the nodes: 0.05 or 5% (default 1% of the nodes, at least 1)
  count     a number of nodes (modules for move) instead of rate
  passes    the window: A-B, A- (to the last pass) or A; passes count from 1
            (default: the whole run)
  every     1 (each pass of the window, the default) or 2 (every other pass,
            from the first): reads and lossy only

Nodes are chosen at random from the seed, each fault its own draw.
Example: remove:count=3,passes=5-20;reads:rate=1%,passes=10-16,every=2;rollout:passes=30`

// ParseFaults reads a fault SPEC (SpecHelp). An empty SPEC is no faults.
// An error wraps ErrSpec and names the fault and what was wrong.
func ParseFaults(spec string) ([]Fault, error) {
	var out []Fault
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	for i, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f, err := parseFault(part)
		if err != nil {
			return nil, fmt.Errorf("%w: fault %d %q: %w", ErrSpec, i+1, part, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func parseFault(s string) (Fault, error) {
	kind, args, _ := strings.Cut(s, ":")
	f := Fault{Kind: FaultKind(strings.TrimSpace(kind)), From: 1, Every: 1}
	known := false
	for _, k := range faultKinds {
		known = known || k == f.Kind
	}
	if !known {
		names := make([]string, len(faultKinds))
		for i, k := range faultKinds {
			names[i] = string(k)
		}
		return f, fmt.Errorf("unknown kind %q: want one of %s", kind, strings.Join(names, ", "))
	}
	seen := map[string]bool{}
	if strings.TrimSpace(args) != "" {
		for _, kv := range strings.Split(args, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || v == "" {
				return f, fmt.Errorf("%q: want KEY=VALUE", kv)
			}
			if seen[k] {
				return f, fmt.Errorf("%s given twice", k)
			}
			seen[k] = true
			if err := f.set(k, v); err != nil {
				return f, err
			}
		}
	}
	if seen["rate"] && seen["count"] {
		return f, errors.New("give rate or count, not both")
	}
	switch {
	case f.Kind == FaultRollout && (seen["rate"] || seen["count"]):
		return f, errors.New("a roll-out is of every module: it takes no rate or count")
	case f.Kind != FaultRollout && !seen["rate"] && !seen["count"]:
		f.Rate = 0.01
	}
	if f.Every > 1 && f.Kind != FaultReads && f.Kind != FaultLossy {
		return f, fmt.Errorf("every=%d: only reads and lossy act every other pass", f.Every)
	}
	return f, nil
}

// maxPass bounds a window's passes, so that sums over them cannot overflow.
const maxPass = 1 << 30

func (f *Fault) set(k, v string) error {
	switch k {
	case "rate":
		pct := strings.HasSuffix(v, "%")
		r, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil {
			return fmt.Errorf("rate %q: not a number", v)
		}
		if pct {
			r /= 100
		}
		if !(r > 0 && r <= 1) { // also NaN
			return fmt.Errorf("rate %q: want more than 0 and at most 1 (100%%)", v)
		}
		f.Rate = r
	case "count":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPass {
			return fmt.Errorf("count %q: want a whole number from 1", v)
		}
		f.Count = n
	case "passes":
		from, to, dash := strings.Cut(v, "-")
		a, err := pass(from)
		if err != nil {
			return fmt.Errorf("passes %q: %w", v, err)
		}
		b := a
		switch {
		case dash && to == "":
			b = 0
		case dash:
			if b, err = pass(to); err != nil {
				return fmt.Errorf("passes %q: %w", v, err)
			}
			if b < a {
				return fmt.Errorf("passes %q: the window ends before it starts", v)
			}
		}
		f.From, f.To = a, b
	case "every":
		n, err := strconv.Atoi(v)
		if err != nil || (n != 1 && n != 2) {
			return fmt.Errorf("every %q: want 1 or 2", v)
		}
		f.Every = n
	default:
		return fmt.Errorf("unknown key %q: want rate, count, passes or every", k)
	}
	return nil
}

func pass(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > maxPass {
		return 0, fmt.Errorf("%q is not a pass (a whole number from 1)", s)
	}
	return n, nil
}

// FaultsOf reads mesh sim's --faults over a run of passes: "default"
// (DefaultFaults), "none" or "" (no faults), else a SPEC (ParseFaults).
func FaultsOf(spec string, passes int) ([]Fault, error) {
	switch spec {
	case "default":
		return DefaultFaults(passes), nil
	case "none", "":
		return nil, nil
	}
	return ParseFaults(spec)
}

// DefaultFaults is every kind of fault at once, in windows placed over a
// run of passes (at least 20 make every window distinct): a loop, a roster
// flip, a store in recovery, a cut bus, nodes joining and leaving, an
// operators' burst, moved modules, a full roll-out followed by a loop, and
// adopted nodes with found data.
func DefaultFaults(passes int) []Fault {
	at := func(frac float64) int { return max(1, int(frac*float64(passes)+0.5)) }
	w := func(k FaultKind, rate float64, count int, from, to float64, every int) Fault {
		a, b := at(from), at(to)
		return Fault{Kind: k, Rate: rate, Count: count, From: a, To: max(a, b), Every: every}
	}
	return []Fault{
		w(FaultAdopt, 0.02, 0, 0, 0.5, 1),
		w(FaultRemove, 0.01, 0, 0.1, 0.3, 1),
		w(FaultCut, 0.01, 0, 0.15, 0.25, 1),
		w(FaultJoin, 0.01, 0, 0.3, 0.45, 1),
		w(FaultLossy, 0, 1, 0.35, 0.5, 2),
		w(FaultLeave, 0.01, 0, 0.55, 0.55, 1),
		w(FaultReads, 0, 1, 0.6, 0.7, 2),
		w(FaultBurst, 0.02, 0, 0.72, 0.75, 1),
		w(FaultMove, 0, 3, 0.76, 0.8, 1),
		w(FaultRollout, 0, 0, 0.85, 0.85, 1),
		w(FaultRemove, 0.01, 0, 0.86, 0.95, 1),
	}
}
