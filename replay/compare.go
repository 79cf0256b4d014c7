package replay

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"meshplane/events"
	"meshplane/projections"
)

// compose kinds of a node's pass.
const (
	composedKind = "composed"
	failedKind   = "failed"
	noneKind     = "none"
)

func composeKind(p *nodePass) string {
	switch {
	case p == nil:
		return noneKind
	case p.composed != nil && p.prev != nil && p.prev.Digest == p.composed.Digest:
		return noneKind // the same declaration again (after a failed compose): nothing new
	case p.composed != nil:
		return composedKind
	case p.failed != nil:
		return failedKind
	}
	return noneKind
}

// composeText says what a node's pass composed, in a sentence.
func composeText(p *nodePass) string {
	switch composeKind(p) {
	case composedKind:
		changed, gained, lost := changedSince(p.prev, p.composed)
		var what []string
		if len(gained)+len(lost) > 0 {
			what = append(what, "roster "+signed(gained, lost))
		}
		what = append(what, fmt.Sprintf("%d resource(s) changed", len(changed)))
		return fmt.Sprintf("composed %s %s (%s)", p.composed.Declaration, short(p.composed.Digest), strings.Join(what, "; "))
	case failedKind:
		if p.failed.Read != "" {
			return "compose failed: read " + p.failed.Read
		}
		return "compose failed: " + p.failed.Error
	}
	if p != nil && p.composed != nil {
		return fmt.Sprintf("nothing new composed (the same declaration again, as %s)", p.composed.Declaration)
	}
	return "nothing new composed"
}

// signed is "+a +b -c".
func signed(gained, lost []string) string {
	var out []string
	for _, g := range gained {
		out = append(out, "+"+g)
	}
	for _, l := range lost {
		out = append(out, "-"+l)
	}
	return strings.Join(out, " ")
}

// short is a digest's first 12 hex digits.
func short(d string) string {
	h, ok := strings.CutPrefix(d, "sha256:")
	if ok && len(h) > 12 {
		return "sha256:" + h[:12]
	}
	return d
}

// compareRound lists the divergences of one round, node by node, in
// kind order.
func compareRound(rec, today map[string]*nodePass, recF, todayF *facts) []Divergence {
	nodes := slices.Sorted(maps.Keys(rec))
	for n := range today {
		if rec[n] == nil {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	var out []Divergence
	for _, n := range nodes {
		r, t := rec[n], today[n]
		rk, tk := composeKind(r), composeKind(t)
		switch {
		case rk != tk || (rk == failedKind && r.failed.Read != t.failed.Read):
			out = append(out, Divergence{Node: n, Kind: KindCompose, Recorded: composeText(r), Today: composeText(t)})
		case rk == composedKind && r.composed.Digest != t.composed.Digest:
			out = append(out, declDiff(n, r, t, recF, todayF))
		}
		if rf, tf := r != nil && r.pushFailed != nil, t != nil && t.pushFailed != nil; rf != tf {
			out = append(out, Divergence{Node: n, Kind: KindSend, Recorded: sendText(r), Today: sendText(t)})
		}
		var ra, ta *events.ApplyReported
		if r != nil {
			ra = r.apply
		}
		if t != nil {
			ta = t.apply
		}
		if d, ok := applyDiff(n, ra, ta); ok {
			out = append(out, d)
		}
		if d, ok := holdsDiff(n, ra, ta); ok {
			out = append(out, d)
		}
	}
	return out
}

func sendText(p *nodePass) string {
	if p != nil && p.pushFailed != nil {
		return "send of " + p.pushFailed.Declaration + " failed: " + p.pushFailed.Error
	}
	return "no send failed"
}

// declDiff is the divergence of two declarations composed for a node in
// one pass: the roster names and the resources that differ.
func declDiff(node string, r, t *nodePass, recF, todayF *facts) Divergence {
	d := Divergence{
		Node: node, Kind: KindDeclaration, Recorded: composeText(r), Today: composeText(t),
		RosterRecordedOnly: setDiff(r.composed.Roster, t.composed.Roster),
		RosterTodayOnly:    setDiff(t.composed.Roster, r.composed.Roster),
	}
	rd, td := digests(r.composed), digests(t.composed)
	names := slices.Sorted(maps.Keys(rd))
	for n := range td {
		if _, ok := rd[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if rd[n] == td[n] {
			continue
		}
		var fields []string
		if rd[n] != "" && td[n] != "" {
			fields = specFields(recF.specs[rd[n]], todayF.specs[td[n]])
		}
		d.Resources = append(d.Resources, ResourceDiff{Name: n, Recorded: rd[n], Today: td[n], Fields: fields})
	}
	return d
}

// outcomes maps each resource an apply did something to to what it did.
func outcomes(a *events.ApplyReported) map[string]ResourceDiff {
	out := map[string]ResourceDiff{}
	if a == nil {
		return out
	}
	for _, n := range a.Created {
		out[n] = ResourceDiff{Name: n, Recorded: "created"}
	}
	for _, r := range a.Replaced {
		out[r.Name] = ResourceDiff{Name: r.Name, Recorded: "replaced", Fields: r.Fields}
	}
	for _, r := range a.Updated {
		out[r.Name] = ResourceDiff{Name: r.Name, Recorded: "updated", Fields: r.Fields}
	}
	for _, n := range a.Removed {
		out[n] = ResourceDiff{Name: n, Recorded: "removed"}
	}
	for _, f := range a.Failed {
		out[f.Name] = ResourceDiff{Name: f.Name, Recorded: "failed"}
	}
	return out
}

func applyText(a *events.ApplyReported) string {
	if a == nil {
		return "no apply"
	}
	return a.Declaration + ": " + a.Summary()
}

// applyDiff compares two applies of a node in one pass, resource by
// resource.
func applyDiff(node string, r, t *events.ApplyReported) (Divergence, bool) {
	d := Divergence{Node: node, Kind: KindApply, Recorded: applyText(r), Today: applyText(t)}
	if (r == nil) != (t == nil) {
		return d, true
	}
	ro, to := outcomes(r), outcomes(t)
	names := slices.Sorted(maps.Keys(ro))
	for n := range to {
		if _, ok := ro[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		a, b := ro[n], to[n]
		if a.Recorded == b.Recorded {
			continue
		}
		fields := a.Fields
		if len(fields) == 0 {
			fields = b.Fields
		}
		d.Resources = append(d.Resources, ResourceDiff{Name: n, Recorded: a.Recorded, Today: b.Recorded, Fields: fields})
	}
	return d, len(d.Resources) > 0
}

func heldKeys(a *events.ApplyReported) []string {
	var out []string
	if a == nil {
		return nil
	}
	for _, h := range a.Held {
		out = append(out, h.Name+"\x00"+h.Module+"\x00"+h.Reason)
	}
	slices.Sort(out)
	return out
}

// holdsDiff compares what two applies of a node in one pass held.
func holdsDiff(node string, r, t *events.ApplyReported) (Divergence, bool) {
	if r == nil || t == nil {
		return Divergence{}, false // the apply's divergence says it
	}
	rh, th := heldKeys(r), heldKeys(t)
	if slices.Equal(rh, th) {
		return Divergence{}, false
	}
	d := Divergence{Node: node, Kind: KindHolds,
		Recorded: fmt.Sprintf("%d held", len(r.Held)), Today: fmt.Sprintf("%d held", len(t.Held))}
	for _, k := range setDiff(rh, th) {
		name, rest, _ := strings.Cut(k, "\x00")
		d.Resources = append(d.Resources, ResourceDiff{Name: name, Recorded: "held: " + strings.ReplaceAll(rest, "\x00", ": ")})
	}
	for _, k := range setDiff(th, rh) {
		name, rest, _ := strings.Cut(k, "\x00")
		d.Resources = append(d.Resources, ResourceDiff{Name: name, Today: "held: " + strings.ReplaceAll(rest, "\x00", ": ")})
	}
	return d, true
}

// episodes lists c's episodes, their positions turned into passes by
// ran (an apply's position → the pass it ran in, its report delivered
// in that pass or later) or else ends (each pass's last position).
func episodes(c *projections.Churn, ends []uint64, ran map[uint64]int) []Episode {
	passOf := func(p uint64) int {
		if k, ok := ran[p]; ok {
			return k
		}
		return roundOf(ends, p)
	}
	var out []Episode
	for _, n := range c.Nodes() {
		for _, e := range c.Episodes(n) {
			ep := Episode{
				Node: n, Loop: e.Loop, Flip: e.Flip, Start: passOf(e.Start.Position),
				Detected: passOf(e.Detected.Position), HeavyPasses: e.HeavyPasses, Flips: e.Flips,
			}
			if e.End != nil {
				ep.End = passOf(e.End.Position)
			}
			out = append(out, ep)
		}
	}
	return out
}

func episodeText(e *Episode) string {
	if e == nil {
		return "no churn episode"
	}
	var what []string
	if e.Loop {
		what = append(what, "churn loop")
	}
	if e.Flip {
		what = append(what, "flip")
	}
	end := "still open"
	if e.End > 0 {
		end = fmt.Sprintf("ended at pass %d", e.End)
	}
	return fmt.Sprintf("%s from pass %d, detected at pass %d, %s (%d heavy pass(es), %d flip(s))",
		strings.Join(what, " and "), e.Start, e.Detected, end, e.HeavyPasses, e.Flips)
}

// churnDiffs lists the episodes of one run that the other has not (the
// same node, start, loop and flip), at their start.
func churnDiffs(rec, today []Episode) []Divergence {
	same := func(a, b Episode) bool {
		return a.Node == b.Node && a.Start == b.Start && a.Loop == b.Loop && a.Flip == b.Flip && a.End == b.End
	}
	var out []Divergence
	for i := range rec {
		if !slices.ContainsFunc(today, func(b Episode) bool { return same(rec[i], b) }) {
			out = append(out, Divergence{Pass: rec[i].Start, Node: rec[i].Node, Kind: KindChurn, Recorded: episodeText(&rec[i]), Today: episodeText(nil)})
		}
	}
	for i := range today {
		if !slices.ContainsFunc(rec, func(a Episode) bool { return same(a, today[i]) }) {
			out = append(out, Divergence{Pass: today[i].Start, Node: today[i].Node, Kind: KindChurn, Recorded: episodeText(nil), Today: episodeText(&today[i])})
		}
	}
	return out
}
