package main

import (
	"cmp"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
)

// isTime reports whether s is an RFC 3339 time (else a position).
func isTime(s string) bool { return flagcheck.RFC3339(s) == nil }

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
printed (from a controller, page after page). A node or a module no event
names, or a --type no event type is or begins, is refused (exit 3), naming
what there is.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if until != "" && !isTime(until) { // --until POSITION: the timeline --at it
				_, until = cmd.Flags().Set(flagAt, until), "" // checked: session.CheckAt
			}
			req.Since, req.Until = flagcheck.SinceTime(since, e.now()), flagcheck.Time(until)
			return withQuery(cmd, func(s *session.Session) error {
				raw, sk, err := s.Timeline(cmd.Context(), req, limit, timelinePage)
				m, merr := s.Moment(cmd.Context())
				if err = cmp.Or(err, merr, render.AsOf(cmd.OutOrStdout(), render.Format(out), m)); err != nil {
					return err
				}
				return render.Timeline(cmd.OutOrStdout(), render.Format(out), raw, sk)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&req.Node, "node", "", "only events of this `node`")
	fs.StringVar(&req.Module, "module", "", "only events naming this `module`")
	fs.StringVar(&req.Resource, "resource", "", "only applies that touched this `resource`")
	fs.StringVar(&req.Type, "type", "", "only events of this `type`, or of every type it begins (apply, declaration.); one that matches none is refused, exit 3")
	fs.StringVar(&req.Correlation, "correlation", "", "only events of this push (`id`)")
	fs.StringVar(&since, "since", "", "only events at or after this `time`: RFC 3339, or a duration before now (10m, 2h)")
	fs.StringVar(&until, "until", "", "only events before this `time` (RFC 3339), or up to this position (as --at)")
	fs.IntVar(&limit, "limit", 0, "only the last `N` matches (0: all)")
	flagcheck.Install(fs, map[string]flagcheck.Check{"since": flagcheck.Optional(flagcheck.Since), "until": flagcheck.Optional(session.CheckAt), "limit": flagcheck.AtLeast(0)})
	_ = cmd.RegisterFlagCompletionFunc("node", completeNodes)
	addQuery(cmd)
	return cmd
}
