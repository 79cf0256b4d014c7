package api

import "slices"

// Collapse replaces each run of entries of one node with identical
// outcomes (see Run), consecutive among that node's entries in es, by the
// run's first entry with Run set, so that a year of quiet passes reads as
// a few lines: what mesh timeline and the web console show. Entries stay
// in position order, a run at the place of its first entry. es is not
// modified. It is the one collapse: the read side returns every entry.
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
			if last := out[n-1]; sameTouch(last, t) {
				out[n-1].Entry.Run = extend(last.Entry, t.Entry)
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// CollapseWhy is CollapseTouches for a why answer: each run keeps its
// first touch's push, deploy, changes and commands.
func CollapseWhy(ts []WhyTouch) []WhyTouch {
	out := make([]WhyTouch, 0, len(ts))
	for _, t := range ts {
		if n := len(out); n > 0 && sameTouch(out[n-1].Touch, t.Touch) {
			out[n-1].Entry.Run = extend(out[n-1].Entry, t.Entry)
			continue
		}
		out = append(out, t)
	}
	return out
}

// Behind is what a touch's commands and deploy name, each once, oldest
// first: the commands behind its declaration and the builds it runs.
func (t WhyTouch) Behind() []Entry {
	out := append(slices.Clone(t.Commands), t.Deploy...)
	slices.SortStableFunc(out, func(a, b Entry) int {
		switch {
		case a.Position < b.Position:
			return -1
		case a.Position > b.Position:
			return 1
		}
		return 0
	})
	return slices.CompactFunc(out, func(a, b Entry) bool { return a.Position == b.Position })
}

// sameTouch reports whether b continues a's run (CollapseTouches).
func sameTouch(a, b Touch) bool {
	return a.Action == b.Action && a.Reason == b.Reason && slices.Equal(a.Fields, b.Fields) &&
		a.Entry.Declaration == b.Entry.Declaration && a.Entry.Node == b.Entry.Node &&
		a.Entry.Churn == "" && b.Entry.Churn == ""
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
