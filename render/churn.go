package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"meshplane/api"
)

// Churn shows each node's churn episodes, open and past, with their
// evidence (mesh churn); its JSON is the episodes by node. The table
// writes each episode's evidence as lines of words, one kind a line, and
// leaves out a kind the episode saw none of. sk is what the answer left
// out.
func Churn(w io.Writer, f Format, resp api.ChurnResponse, sk api.Skipped) error {
	if f == JSON {
		all := map[string][]api.Episode{}
		for _, nc := range resp.Nodes {
			all[nc.Node] = nc.Episodes
		}
		if err := writeJSONAt(w, resp.AsOf, "nodes", all); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	any := false
	for _, nc := range resp.Nodes {
		for _, ep := range nc.Episodes {
			any = true
			state := "cleared"
			if ep.Active() {
				state = "ACTIVE"
			}
			kind := []string{}
			if ep.Loop {
				kind = append(kind, "loop")
			}
			if ep.Flip {
				kind = append(kind, "flip")
			}
			pf(w, "%s: %s %s, from #%d (%s), detected at #%d, %d passes, %d heavy\n",
				nc.Node, state, strings.Join(kind, "+"), ep.Start.Position, stamp(ep.Start.At), ep.Detected.Position, ep.Passes, ep.HeavyPasses)
			evidence(w, ep.Evidence)
		}
	}
	if !any {
		pf(w, "no churn: no heavy passes in a row and no flips\n")
	}
	return Partial(sk, false)
}

// evidence writes what an episode saw, one kind a line.
func evidence(w io.Writer, ev api.Evidence) {
	var lines []string
	if len(ev.Declarations) > 0 {
		var ds []string
		for _, d := range ev.Declarations {
			ds = append(ds, fmt.Sprintf("%s (%s, #%d)", d.Declaration, d.Digest, d.Position))
		}
		if ev.MoreDeclarations > 0 {
			ds = append(ds, fmt.Sprintf("and %d more", ev.MoreDeclarations))
		}
		lines = append(lines, "declarations: "+strings.Join(ds, ", "))
	}
	if len(ev.Fields) > 0 {
		var fs []string
		for _, k := range slices.Sorted(maps.Keys(ev.Fields)) {
			fs = append(fs, fmt.Sprintf("%s (%d)", k, ev.Fields[k]))
		}
		lines = append(lines, "replaced for: "+strings.Join(fs, ", "))
	}
	for _, r := range ev.FailedReads {
		lines = append(lines, fmt.Sprintf("failed read: %s: %s (from #%d, %d time(s))", r.Read, r.Error, r.Position, r.Count))
	}
	if len(ev.RosterChanged) > 0 {
		lines = append(lines, "roster changed: "+strings.Join(ev.RosterChanged, ", "))
	}
	if len(lines) == 0 {
		lines = []string{"evidence: none recorded"}
	}
	for _, l := range lines {
		pf(w, "    %s\n", l)
	}
}
