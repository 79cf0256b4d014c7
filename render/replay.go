package render

import (
	"fmt"
	"io"
	"strings"

	"meshplane/replay"
)

// Replay prints what mesh replay found (replay.Report): what it replayed,
// each run's totals, and every divergence, pass by pass. JSON is the
// report itself.
func Replay(w io.Writer, f Format, r *replay.Report) error {
	if f == JSON {
		return WriteJSON(w, r)
	}
	pf(w, "replay of %s: %d pass(es) on %d node(s) (%s), %d event(s) through position %d (%s)\n",
		r.History, r.Passes, len(r.Nodes), strings.Join(r.Nodes, ", "), r.Events, r.Through, stamp(r.At))
	in := r.Inputs
	pf(w, "replayed: %d operator command(s) (%d refused today, %d build(s)), %d failed read(s), %d container(s) removed from outside, %d send(s) cut, %d found directory(ies)\n",
		in.Commands, in.Refused, in.Builds, in.FailedReads, in.Removed, in.Cuts, in.Found)
	if len(in.Unreplayed) > 0 {
		pf(w, "not replayed (the sandbox cannot inject it): %s\n", strings.Join(in.Unreplayed, ", "))
	}
	pln(w)
	tw := table(w)
	pf(tw, "\trecorded\ttoday\n")
	for _, row := range []struct {
		name string
		a, b int
	}{
		{"declarations composed", r.Recorded.Composed, r.Today.Composed},
		{"composes failed", r.Recorded.ComposeFailed, r.Today.ComposeFailed},
		{"sends failed", r.Recorded.PushFailed, r.Today.PushFailed},
		{"applies", r.Recorded.Applies, r.Today.Applies},
		{"resources created", r.Recorded.Created, r.Today.Created},
		{"resources replaced", r.Recorded.Replaced, r.Today.Replaced},
		{"passes that replaced", r.Recorded.ReplacingPasses, r.Today.ReplacingPasses},
		{"resources removed", r.Recorded.Removed, r.Today.Removed},
		{"churn episodes", r.Recorded.Episodes, r.Today.Episodes},
	} {
		pf(tw, "%s\t%d\t%d\n", row.name, row.a, row.b)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pln(w)
	if r.Agree {
		_, err := pf(w, "the runs agree: today's build does what the recorded one did, pass by pass\n")
		return err
	}
	pf(w, "the runs diverge: %d difference(s)\n", len(r.Divergences))
	for _, d := range r.Divergences {
		node := d.Node
		if node == "" {
			node = "-"
		}
		pf(w, "\npass %d  %s  position %d  %s  %s\n", d.Pass, stamp(d.At), d.Position, node, d.Kind)
		pf(w, "    recorded: %s\n", d.Recorded)
		pf(w, "    today:    %s\n", d.Today)
		if len(d.RosterRecordedOnly) > 0 {
			pf(w, "    roster, recorded only: %s\n", strings.Join(d.RosterRecordedOnly, " "))
		}
		if len(d.RosterTodayOnly) > 0 {
			pf(w, "    roster, today only: %s\n", strings.Join(d.RosterTodayOnly, " "))
		}
		if d.Kind == replay.KindDeclaration && len(d.RosterRecordedOnly)+len(d.RosterTodayOnly)+len(d.Resources) == 0 {
			pf(w, "    the same roster and resource digests: the declaration's digest covers more, or other, than it did\n")
		}
		for _, g := range groupResources(d) {
			pf(w, "    %s\n", g)
		}
	}
	return nil
}

// groupResources tells a divergence's resources a line per kind of
// difference: how many, what, and the first few names.
func groupResources(d replay.Divergence) []string {
	type group struct {
		what  string
		names []string
	}
	var groups []*group
	by := map[string]*group{}
	for _, res := range d.Resources {
		var what string
		switch d.Kind {
		case replay.KindDeclaration:
			switch {
			case res.Recorded == "":
				what = "declared today only"
			case res.Today == "":
				what = "declared in the recorded run only"
			case len(res.Fields) > 0:
				what = "other digests, fields " + strings.Join(res.Fields, " ")
			default:
				what = "other digests (a spec is not recorded: fields unknown)"
			}
		default:
			none := "unchanged"
			if d.Kind == replay.KindHolds {
				none = "not held"
			}
			what = fmt.Sprintf("recorded %s, today %s", orNone(res.Recorded, none), orNone(res.Today, none))
			if len(res.Fields) > 0 {
				what += " (" + strings.Join(res.Fields, " ") + ")"
			}
		}
		g := by[what]
		if g == nil {
			g = &group{what: what}
			by[what] = g
			groups = append(groups, g)
		}
		g.names = append(g.names, res.Name)
	}
	var out []string
	for _, g := range groups {
		names := g.names
		more := ""
		if len(names) > 3 {
			more = fmt.Sprintf(" and %d more", len(names)-3)
			names = names[:3]
		}
		out = append(out, fmt.Sprintf("%d resource(s): %s: %s%s", len(g.names), g.what, strings.Join(names, ", "), more))
	}
	return out
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
