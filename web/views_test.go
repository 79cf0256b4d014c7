package web

import (
	"fmt"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// TestBuildNodeBounds: what a node's page renders is bounded by the page,
// not by the node's history: its episodes are those on the page and the
// latest few, an entry names a bounded number of resources, and each
// column falls in the episode that covers it (or none).
func TestBuildNodeBounds(t *testing.T) {
	at := time.Date(2026, 9, 29, 22, 0, 0, 0, time.UTC)
	mark := func(p uint64) api.Mark { return api.Mark{Position: p, At: at} }
	// 40 closed episodes over positions 10k..10k+5, then an open one from 1000.
	var eps []api.Episode
	for i := range 40 {
		end := mark(uint64(i*10 + 5))
		eps = append(eps, api.Episode{Node: "n", Loop: true, Start: mark(uint64(i * 10)), Detected: mark(uint64(i*10 + 2)), End: &end})
	}
	eps = append(eps, api.Episode{Node: "n", Flip: true, Start: mark(1000), Detected: mark(1001)})
	var res []string
	for i := range 100 {
		res = append(res, fmt.Sprintf("r%03d", i))
	}
	entry := func(p uint64) api.Entry {
		return api.Entry{Position: p, At: at, Node: "n", Type: events.TypeApplyReported, Summary: "applied 100 resource(s); created a", Resources: res, Declaration: fmt.Sprintf("n/%d", p)}
	}
	page := api.TimelinePage{Entries: []api.Entry{entry(3), entry(8), entry(12), entry(999), entry(1002)}}
	v := buildNode("n", page, false, false, eps, 5)

	wantBand := []int{0, -1, 1, -1, 40}
	for i, c := range v.Columns {
		if c.Band != wantBand[i] {
			t.Errorf("column at position %d: band %d, want %d", c.Entry.Position, c.Band, wantBand[i])
		}
		if len(c.Resources) != maxResources || c.MoreResources != 100-maxResources {
			t.Errorf("column at position %d names %d resources and counts %d more", c.Entry.Position, len(c.Resources), c.MoreResources)
		}
	}
	// Shown: episodes 0 and 1 (on the page) and the latest maxEpisodes
	// (31..40); the other 29 are counted.
	if got, want := len(v.Shown), 2+maxEpisodes; got != want {
		t.Errorf("%d episodes shown, want %d", got, want)
	}
	if got, want := v.Earlier, len(eps)-2-maxEpisodes; got != want {
		t.Errorf("%d earlier episodes counted, want %d", got, want)
	}
	if !v.Shown[0].On || v.Shown[0].ID != "ep-0" || v.Shown[len(v.Shown)-1].ID != "ep-40" {
		t.Errorf("shown episodes run from %s to %s", v.Shown[0].ID, v.Shown[len(v.Shown)-1].ID)
	}
	// The band row: one cell per run of columns in the same episode.
	var spans []int
	for _, b := range v.Bands {
		spans = append(spans, b.Span)
	}
	if fmt.Sprint(spans) != "[1 1 1 1 1]" || !v.Bands[4].Open {
		t.Errorf("bands %+v", v.Bands)
	}
}
