package api

import "slices"

// Collapse replaces each run of entries of one node with identical
// outcomes (see Run), consecutive among that node's entries in es, by the
// run's first entry with Run set, so that a year of quiet passes reads as
// a few lines: what mesh timeline and the web console show. Entries stay
// in position order, a run at the place of its first entry. es is not
// modified. It is projections.Collapse on the API's entries
// (controller's TestCollapseAsProjections holds the two to the same answers).
func Collapse(es []Entry) []Entry {
	out := make([]Entry, 0, len(es))
	open := map[string]int{} // node → index in out of its last entry
	for _, en := range es {
		if i, ok := open[en.Node]; ok && sameOutcome(out[i], en) {
			out[i].Run = extend(out[i], en)
			continue
		}
		open[en.Node] = len(out)
		out = append(out, en)
	}
	return out
}

// CollapseTouches is Collapse for Why: consecutive touches of the resource
// with the same action, fields, reason and declaration, and no churn mark,
// become the first with its Entry.Run set.
func CollapseTouches(ts []Touch) []Touch {
	out := make([]Touch, 0, len(ts))
	for _, t := range ts {
		if n := len(out); n > 0 {
			last := out[n-1]
			if last.Action == t.Action && last.Reason == t.Reason && slices.Equal(last.Fields, t.Fields) &&
				last.Entry.Declaration == t.Entry.Declaration && last.Entry.Node == t.Entry.Node &&
				last.Entry.Churn == "" && t.Entry.Churn == "" {
				out[n-1].Entry.Run = extend(last.Entry, t.Entry)
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

func sameOutcome(a, b Entry) bool {
	return a.Type == b.Type && a.Declaration == b.Declaration && a.Summary == b.Summary &&
		a.Churn == "" && b.Churn == "" && a.Heavy == b.Heavy && slices.Equal(a.Resources, b.Resources)
}

// extend is the run of first (alone or already a run) followed by next.
func extend(first, next Entry) *Run {
	r := Run{Count: 1, From: first.At, To: first.At, FirstPosition: first.Position, LastPosition: first.Position}
	if first.Run != nil {
		r = *first.Run
	}
	r.Count++
	r.To, r.LastPosition = next.At, next.Position
	return &r
}
