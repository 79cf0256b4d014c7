package projections

import (
	"testing"
	"unsafe"

	"meshplane/events"
)

// TestQuietReportsShareOnePayload: a node's quiet reports of the same
// outcome keep one resolved report between them, and one copy of their
// correlation's text; a report of another outcome (another count, held
// list, declaration, or a change between them) keeps its own, and every
// entry reads as its own report.
func TestQuietReportsShareOnePayload(t *testing.T) {
	held := []events.Held{{Name: "m-2", Module: "m", Reason: "adopted: not taken"}}
	quiet := events.ApplyReported{Declaration: "d1", Sent: 3, Applied: 3, Unchanged: 3, Digest: "A"}
	withHeld := quiet
	withHeld.Held, withHeld.ApplyID = held, id(3).String() // the first report's, at position 3
	since := quiet
	since.HeldSince = withHeld.ApplyID
	fewer := quiet
	fewer.Unchanged = 2
	changed := quiet
	changed.Replaced = []events.Replaced{{Name: "m-0", Fields: []string{"image"}}}
	other := quiet
	other.Declaration = "d2"
	tests := []struct {
		name    string
		reports []events.ApplyReported
		shared  []bool // per report: its entry shares the one before's payload
		texts   []int  // per report: the unchanged count its summary shows
	}{
		{"a quiet run", []events.ApplyReported{quiet, quiet, quiet}, []bool{false, true, true}, []int{3, 3, 3}},
		{"another count", []events.ApplyReported{quiet, fewer, fewer, quiet}, []bool{false, false, true, false}, []int{3, 2, 2, 3}},
		{"a change between", []events.ApplyReported{quiet, changed, quiet}, []bool{false, false, false}, []int{3, 3, 3}},
		{"another declaration", []events.ApplyReported{quiet, other, other}, []bool{false, false, true}, []int{3, 3, 3}},
		{"held in full, then named", []events.ApplyReported{withHeld, since, since}, []bool{false, false, true}, []int{3, 3, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			g.composed("novox", "d1", "A", nil, resources("m", 3, "A"))
			g.composed("novox", "d2", "A", nil, resources("m", 3, "A"))
			for _, a := range tc.reports {
				g.applied("novox", a)
			}
			tl := g.folded().Timeline
			var prev *tlApply
			for i := range tc.reports {
				e := tl.at(2 + i)
				p := e.p.(*tlApply)
				if got := prev != nil && p == prev; got != tc.shared[i] {
					t.Errorf("report %d: shares the one before's payload %v, want %v", i, got, tc.shared[i])
				}
				if got := p.report().Unchanged; got != tc.texts[i] {
					t.Errorf("report %d: reads %d unchanged, want %d", i, got, tc.texts[i])
				}
				if i > 0 && e.correlation != "" {
					if b := tl.at(1 + i); b.correlation == e.correlation && !sameText(b.correlation, e.correlation) {
						t.Errorf("report %d: correlation %q is a copy of the one before's", i, e.correlation)
					}
				}
				prev = p
			}
			es := tl.Query(Filter{Node: "novox", Type: events.TypeApplyReported, Forward: true})
			if len(es) != len(tc.reports) {
				t.Fatalf("%d apply entries, want %d", len(es), len(tc.reports))
			}
			for i, en := range es {
				if tc.reports[i].HeldSince != "" || len(tc.reports[i].Held) > 0 {
					if len(en.Held) != 1 || en.Held[0] != held[0] {
						t.Errorf("entry %d: held %v, want %v", i, en.Held, held)
					}
				}
			}
		})
	}
}

// sameText reports whether a and b are one copy of their text.
func sameText(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}
