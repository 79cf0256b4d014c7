package api

import "context"

// FetchTimeline reads the matches of req from svc, following the pages'
// cursors: the last limit of them, paging back from the newest, or, with
// a limit of 0, every one, paging forward from the oldest. req.Limit is
// the size of the pages it asks for (0: MaxTimelineLimit); its cursors
// and direction are FetchTimeline's own. It returns the matches in
// position order, and what the last page said was skipped.
func FetchTimeline(ctx context.Context, svc Service, req TimelineRequest, limit int) ([]Entry, Skipped, error) {
	page := req.Limit
	if page <= 0 {
		page = MaxTimelineLimit
	}
	req.Before, req.After, req.Forward = 0, 0, false
	var all []Entry
	var sk Skipped
	if limit <= 0 {
		req.Forward = true
		for {
			req.Limit = page
			p, err := svc.Timeline(ctx, req)
			if err != nil {
				return nil, sk, err
			}
			all, sk = append(all, p.Entries...), p.Skipped
			if p.Next == 0 || len(p.Entries) == 0 {
				return all, sk, nil
			}
			req.After = p.Next
		}
	}
	var pages [][]Entry
	for n := 0; n < limit; {
		req.Limit = min(limit-n, page)
		p, err := svc.Timeline(ctx, req)
		if err != nil {
			return nil, sk, err
		}
		pages, sk = append(pages, p.Entries), p.Skipped
		n += len(p.Entries)
		if p.Next == 0 || len(p.Entries) == 0 {
			break
		}
		req.Before = p.Next
	}
	for i := len(pages) - 1; i >= 0; i-- {
		all = append(all, pages[i]...)
	}
	return all, sk, nil
}
