package render

import (
	"fmt"
	"io"
	"strings"

	"meshplane/api"
	"meshplane/events"
)

// Timeline shows the timeline's matches, oldest first, with quiet passes
// collapsed into one line (api.Collapse) with their count and time range
// (mesh timeline); its JSON is the collapsed entries. sk is what the
// answer left out, noted after the table.
func Timeline(w io.Writer, f Format, matches []api.Entry, sk api.Skipped) error {
	entries := api.Collapse(matches)
	if f == JSON {
		if err := WriteJSON(w, entries); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	tw := table(w)
	pf(tw, "#\tAT\tNODE\tTYPE\tACTOR\tSUMMARY\n")
	for _, en := range entries {
		summary := en.Summary
		if r := en.Run; r != nil {
			what := "times"
			if en.Type == events.TypeApplyReported {
				what = "passes"
			}
			if en.Idle {
				summary += "; nothing changed"
			} else {
				summary += "; the same"
			}
			summary += fmt.Sprintf(", %d %s, %s, #%d to #%d", r.Count, what, span(r.From, r.To), r.FirstPosition, r.LastPosition)
		}
		pf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", en.Position, stamp(en.At), orDash(en.Node), en.Type, orDash(en.Actor), summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return Noted(w, sk)
}

// Why shows every apply that touched a resource on a node, quiet passes
// collapsed into one touch (api.CollapseWhy, which keeps the first's
// entry and so its push), each with every changed field's old and new
// value, the push, the commands behind it (with their actor and time) and
// the deploy of the build it runs (mesh why); its JSON is the collapsed
// touches. sk is what the answer left out.
func Why(w io.Writer, f Format, resp api.WhyResponse, sk api.Skipped) error {
	touches := api.CollapseWhy(resp.Touches)
	if f == JSON {
		if err := writeJSONAt(w, resp.AsOf, "touches", touches); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	if e := resp.Engine; e != nil {
		// How it runs now first: the workload's state, never the mesh's.
		pf(w, "%s on %s runs %s%s\n", resp.Resource, resp.Node, e.State, reasonOf(*e))
	}
	if len(touches) == 0 {
		pf(w, "no apply on %s has touched %s: every apply found it unchanged, or it was never declared\n", resp.Node, resp.Resource)
		return Partial(sk, false)
	}
	pf(w, "%s on %s:\n", resp.Resource, resp.Node)
	for _, t := range touches {
		pf(w, "  %s  %s", stamp(t.Entry.At), t.Action)
		if len(t.Fields) > 0 {
			pf(w, " (changed: %s)", strings.Join(t.Fields, ", "))
		}
		if r := t.Entry.Run; r != nil {
			pf(w, ", %d passes, %s", r.Count, span(r.From, r.To))
		}
		if t.Reason != "" {
			pf(w, ": %s", t.Reason)
		}
		pln(w)
		for _, c := range t.Changes {
			pf(w, "      %s\n", ChangeWords(c))
		}
		if r := t.Entry.Run; r != nil {
			pf(w, "      by applies #%d to #%d of %s", r.FirstPosition, r.LastPosition, orDash(t.Entry.Declaration))
		} else {
			pf(w, "      by apply #%d of %s", t.Entry.Position, orDash(t.Entry.Declaration))
		}
		if t.Entry.Correlation != "" {
			pf(w, " (push %s: mesh timeline --correlation %s)", t.Entry.Correlation, t.Entry.Correlation)
		}
		pln(w)
		// What the push behind it composed, and what it read (every apply
		// of a declaration shares its correlation: those are left out).
		for _, en := range t.Push {
			if t.Entry.Correlation == "" || en.Type == events.TypeApplyReported || en.Type == events.TypeReportDeliveredLate {
				continue
			}
			pf(w, "      #%d %s %s\n", en.Position, en.Type, en.Summary)
		}
		// The commands behind it, then the build it runs and what deployed
		// it (seed 002), each once.
		for _, en := range t.Behind() {
			pf(w, "      #%d %s %s (%s, %s)\n", en.Position, en.Type, en.Summary, orDash(en.Actor), stamp(en.At))
		}
	}
	return Partial(sk, false)
}

// ChangeWords is one changed field as why and the page word it:
// "env.GREETING: hello → bonjour" ("(none)" for an absent value),
// escaped (Escape): the values are a node's.
func ChangeWords(c api.Change) string {
	from, to := c.From, c.To
	if from == "" {
		from = "(none)"
	}
	if to == "" {
		to = "(none)"
	}
	return Escape(fmt.Sprintf("%s: %s → %s", c.Field, from, to))
}
