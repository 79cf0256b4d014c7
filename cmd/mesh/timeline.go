package main

import (
	"time"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
)

// timelinePage is the page size the timeline asks for while it follows the
// cursors (api.FetchTimeline; a variable: tests make it small to page
// often).
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
				paged := req // the matches, a page of timelinePage at a time
				paged.Limit = timelinePage
				if s.Local != nil && limit == 0 {
					// Every match of a local store: one query of the
					// projections the controller folds. (Following the
					// Service's cursors reads the timeline once a page:
					// each page widens its window from the newest match
					// back to its cursor.)
					if raw, err = s.Local.QueryTimeline(cmd.Context(), req); err != nil {
						return err
					}
				} else if raw, sk, err = api.FetchTimeline(cmd.Context(), s.Service, paged, limit); err != nil {
					return err
				}
				return render.Timeline(cmd.OutOrStdout(), render.Format(out), raw, s.Skipped(sk))
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
	flagcheck.Install(fs, map[string]flagcheck.Check{"since": flagcheck.Optional(flagcheck.RFC3339), "until": flagcheck.Optional(flagcheck.RFC3339), "limit": flagcheck.AtLeast(0)})
	_ = cmd.RegisterFlagCompletionFunc("node", completeNodes)
	addOutput(cmd)
	return cmd
}
