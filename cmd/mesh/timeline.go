package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/events"
	"meshplane/session"
)

// timelinePage is the page size the timeline asks for while it follows the
// cursors (a variable: tests make it small to page often).
var timelinePage = api.MaxTimelineLimit

func (e *env) timelineCmd() *cobra.Command {
	var req api.TimelineRequest
	var since, until string
	var limit int
	cmd := &cobra.Command{
		Use:   "timeline",
		Short: "the audit timeline, filtered",
		Long: `The audit timeline, filtered: every event, oldest first, quiet passes collapsed
into one line with their count and time range. Without --limit every match is
printed (from a controller, page after page).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			if limit < 0 {
				return usagef("--limit %d: give a number of matches, or 0 for all", limit)
			}
			for _, b := range []struct {
				s string
				t *time.Time
			}{{since, &req.Since}, {until, &req.Until}} {
				if b.s == "" {
					continue
				}
				if *b.t, err = time.Parse(time.RFC3339, b.s); err != nil {
					return usagef("%q is not an RFC 3339 time (2026-09-29T23:02:00Z)", b.s)
				}
			}
			return withQuery(cmd, func(s *session.Session) error {
				var raw []api.Entry
				var sk api.Skipped
				if s.Local != nil && limit == 0 {
					// Every match of a local store: one query of the
					// projections the controller folds. (Following the
					// Service's cursors reads the timeline once a page:
					// each page widens its window from the newest match
					// back to its cursor.)
					if raw, err = s.Local.QueryTimeline(cmd.Context(), req); err != nil {
						return err
					}
				} else if raw, sk, err = fetchTimeline(cmd.Context(), s.Service, req, limit); err != nil {
					return err
				}
				sk = s.Skipped(sk)
				entries := api.Collapse(raw)
				if out == outJSON {
					if err := writeJSON(e.stdout, entries); err != nil {
						return err
					}
					return partial(sk, false)
				}
				tw := table(e.stdout)
				fmt.Fprintln(tw, "#\tAT\tNODE\tTYPE\tACTOR\tSUMMARY")
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
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", en.Position, stamp(en.At), orDash(en.Node), en.Type, orDash(en.Actor), summary)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				noteSkipped(e.stdout, sk)
				return partial(sk, true)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&req.Node, "node", "", "only events of this `node`")
	fs.StringVar(&req.Module, "module", "", "only events naming this `module`")
	fs.StringVar(&req.Resource, "resource", "", "only applies that touched this `resource`")
	fs.StringVar(&req.Type, "type", "", "only events of this `type` (apply.reported, ...)")
	fs.StringVar(&req.Correlation, "correlation", "", "only events of this push (`id`)")
	fs.StringVar(&since, "since", "", "only events at or after this `time` (RFC 3339)")
	fs.StringVar(&until, "until", "", "only events before this `time` (RFC 3339)")
	fs.IntVar(&limit, "limit", 0, "only the last `N` matches (0: all)")
	checkFlags(fs, map[string]flagCheck{"since": optional(rfc3339), "until": optional(rfc3339), "limit": atLeast(0)})
	_ = cmd.RegisterFlagCompletionFunc("node", completeNodes)
	addOutput(cmd)
	return cmd
}

// fetchTimeline reads the matches of req, following the pages' cursors:
// the last limit of them, paging back from the newest, or, with no limit,
// every one, paging forward from the oldest. It returns them in position
// order, and what the last page said was skipped.
func fetchTimeline(ctx context.Context, svc api.Service, req api.TimelineRequest, limit int) ([]api.Entry, api.Skipped, error) {
	var all []api.Entry
	var sk api.Skipped
	if limit == 0 {
		req.Forward = true
		for {
			req.Limit = timelinePage
			page, err := svc.Timeline(ctx, req)
			if err != nil {
				return nil, sk, err
			}
			all, sk = append(all, page.Entries...), page.Skipped
			if page.Next == 0 || len(page.Entries) == 0 {
				return all, sk, nil
			}
			req.After = page.Next
		}
	}
	var pages [][]api.Entry
	for n := 0; n < limit; {
		req.Limit = min(limit-n, timelinePage)
		page, err := svc.Timeline(ctx, req)
		if err != nil {
			return nil, sk, err
		}
		pages, sk = append(pages, page.Entries), page.Skipped
		n += len(page.Entries)
		if page.Next == 0 || len(page.Entries) == 0 {
			break
		}
		req.Before = page.Next
	}
	for i := len(pages) - 1; i >= 0; i-- {
		all = append(all, pages[i]...)
	}
	return all, sk, nil
}
