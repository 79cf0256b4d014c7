package api_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// TestCollapse: runs of one node's identical outcomes collapse, each at
// its first entry, broken by any other event of the node or a churn mark.
func TestCollapse(t *testing.T) {
	t0 := time.Date(2026, 9, 29, 23, 2, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	apply := func(pos uint64, node, summary string) api.Entry {
		return api.Entry{Position: pos, At: at(int(pos)), Node: node, Type: events.TypeApplyReported, Declaration: node + "/1", Summary: summary}
	}
	idle := "applied 3 resource(s)"
	busy := "applied 3 resource(s); replaced web (image)"
	marked := apply(9, "a", idle)
	marked.Churn = "churn loop cleared after 4 passes"
	for _, tc := range []struct {
		name string
		in   []api.Entry
		want []string // position[xcount]
	}{
		{"nothing to collapse", []api.Entry{apply(1, "a", idle), apply(2, "a", busy)}, []string{"1", "2"}},
		{"a quiet run", []api.Entry{apply(1, "a", busy), apply(2, "a", idle), apply(3, "a", idle), apply(4, "a", idle)}, []string{"1", "2x3"}},
		{"runs of two nodes interleaved", []api.Entry{apply(1, "a", idle), apply(2, "b", idle), apply(3, "a", idle), apply(4, "b", idle)}, []string{"1x2", "2x2"}},
		{"an event of the node between breaks a run", []api.Entry{apply(1, "a", idle), {Position: 2, Node: "a", Type: events.TypeModuleAssigned, Summary: "x"}, apply(3, "a", idle)}, []string{"1", "2", "3"}},
		{"a churn mark breaks a run", []api.Entry{apply(8, "a", idle), marked, apply(10, "a", idle)}, []string{"8", "9", "10"}},
		{"the same heavy outcome collapses too", []api.Entry{apply(1, "a", busy), apply(2, "a", busy)}, []string{"1x2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, en := range api.Collapse(tc.in) {
				s := strconv.FormatUint(en.Position, 10)
				if en.Run != nil {
					s += "x" + strconv.Itoa(en.Run.Count)
					if en.Run.FirstPosition != en.Position || !en.Run.From.Equal(en.At) || en.Run.To.Before(en.Run.From) {
						t.Errorf("run %+v of entry %d", en.Run, en.Position)
					}
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("collapsed to %v, want %v", got, tc.want)
			}
		})
	}
}
