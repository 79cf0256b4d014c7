package api_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"meshplane/api"
)

// pagedTimeline is a Service whose timeline holds the entries at positions
// 1..n, paged as the controller pages them (api's package comment); every
// other method is left out (nil: a call of one panics). It counts the
// pages asked for, and says of each page that it skipped that page's
// number of events.
type pagedTimeline struct {
	api.Service
	n     uint64
	fail  int // the page (from 1) that fails; 0: none
	pages int
}

var errPage = errors.New("page refused")

func (p *pagedTimeline) Timeline(_ context.Context, req api.TimelineRequest) (api.TimelinePage, error) {
	p.pages++
	if p.pages == p.fail {
		return api.TimelinePage{}, errPage
	}
	if req.Limit <= 0 || req.Limit > api.MaxTimelineLimit {
		return api.TimelinePage{}, errors.New("bad limit")
	}
	lo, hi := uint64(1), p.n // the matches: lo..hi
	if req.Forwards() {
		lo = req.After + 1
	}
	if req.Before > 0 {
		hi = min(hi, req.Before-1)
	}
	page := api.TimelinePage{Skipped: api.Skipped{FailuresTotal: p.pages}}
	if lo > hi {
		return page, nil
	}
	limit := uint64(req.Limit)
	from, to := lo, hi
	if req.Forwards() && hi-lo+1 > limit {
		to = lo + limit - 1
		page.Next = to
	} else if !req.Forwards() && hi-lo+1 > limit {
		from = hi - limit + 1
		page.Next = from
	}
	for pos := from; pos <= to; pos++ {
		page.Entries = append(page.Entries, api.Entry{Position: pos})
	}
	return page, nil
}

// TestFetchTimeline: every match, paging forward, or the last limit,
// paging back, in position order whatever the page size, with what the
// last page skipped; a page's error is the fetch's.
func TestFetchTimeline(t *testing.T) {
	span := func(from, to uint64) []uint64 {
		var ps []uint64
		for p := from; p <= to; p++ {
			ps = append(ps, p)
		}
		return ps
	}
	for _, c := range []struct {
		name        string
		n           uint64
		page, limit int
		fail        int
		want        []uint64
		pages       int
		err         error
	}{
		{"every match, one page", 10, 0, 0, 0, span(1, 10), 1, nil},
		{"every match, pages of 3", 10, 3, 0, 0, span(1, 10), 4, nil},
		{"every match, pages of 1", 4, 1, 0, 0, span(1, 4), 4, nil},
		{"every match, pages that divide it", 9, 3, 0, 0, span(1, 9), 3, nil},
		{"no match", 0, 3, 0, 0, nil, 1, nil},
		{"the last 7, pages of 3", 20, 3, 7, 0, span(14, 20), 3, nil},
		{"the last 2, one page", 20, 0, 2, 0, span(19, 20), 1, nil},
		{"a limit above the matches", 5, 2, 50, 0, span(1, 5), 3, nil},
		{"a limit of the matches", 6, 3, 6, 0, span(1, 6), 2, nil},
		{"the second page fails, forward", 10, 3, 0, 2, nil, 2, errPage},
		{"the second page fails, back", 10, 3, 7, 2, nil, 2, errPage},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := &pagedTimeline{n: c.n, fail: c.fail}
			got, sk, err := api.FetchTimeline(context.Background(), svc, api.TimelineRequest{Limit: c.page}, c.limit)
			if !errors.Is(err, c.err) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			if svc.pages != c.pages {
				t.Errorf("%d page(s) asked for, want %d", svc.pages, c.pages)
			}
			if err != nil {
				return
			}
			var ps []uint64
			for _, en := range got {
				ps = append(ps, en.Position)
			}
			if !slices.Equal(ps, c.want) {
				t.Errorf("positions %v, want %v", ps, c.want)
			}
			if sk.FailuresTotal != c.pages {
				t.Errorf("skipped %+v, want the last page's (%d)", sk, c.pages)
			}
		})
	}
}
