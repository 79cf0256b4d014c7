package events

import (
	"fmt"
	"sort"
	"strings"
)

// Summary is the one line an apply report reads as (docs/scenario-steps.md, "Report
// wording"): "applied A resource(s)", then ", H held for untaken modules (m1:
// h1, m2: h2)" when H > 0, modules by count, largest first, then by name, then
// ", F failed" when F > 0.
func (r ApplyReported) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "applied %d resource(s)", r.Applied)
	if len(r.Held) > 0 {
		fmt.Fprintf(&b, ", %d held for untaken modules (", len(r.Held))
		for i, mc := range HeldByModule(r.Held) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s: %d", mc.Module, mc.Count)
		}
		b.WriteString(")")
	}
	if len(r.Failed) > 0 {
		fmt.Fprintf(&b, ", %d failed", len(r.Failed))
	}
	return b.String()
}

// ModuleCount is a number of resources of one module.
type ModuleCount struct {
	Module string
	Count  int
}

// HeldByModule counts held resources per module, largest count first, then
// by module name.
func HeldByModule(held []Held) []ModuleCount {
	n := map[string]int{}
	for _, h := range held {
		n[h.Module]++
	}
	out := make([]ModuleCount, 0, len(n))
	for m, c := range n {
		out = append(out, ModuleCount{m, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Module < out[j].Module
	})
	return out
}

// Changes counts the resources the apply created, replaced or removed: what
// a heavy pass measures (Heavy, docs/design.md rule 7).
func (r ApplyReported) Changes() int { return len(r.Created) + len(r.Replaced) + len(r.Removed) }
