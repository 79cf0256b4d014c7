package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/events"
	"meshplane/session"
)

func (e *env) whyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "why NODE RESOURCE",
		Short: "why a resource on a node is as it is: every apply that touched it, and the push behind each",
		Long: `Why a resource on a node is as it is: every apply that touched it, and the push
behind each.` + slowLocal,
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if len(args) != 2 {
				return usagef("want NODE RESOURCE")
			}
			node, resource := args[0], args[1]
			return withSession(cmd, false, nil, func(s *session.Session) error {
				resp, err := s.Service.Why(cmd.Context(), api.WhyRequest{Node: node, Resource: resource})
				if err != nil {
					return err
				}
				sk := s.Skipped(api.Skipped{}) // the answer carries none: known locally only
				// Quiet passes collapse into one touch, which keeps the
				// first's entry (and so its push).
				push := map[uint64][]api.Entry{}
				deploy := map[uint64][]api.Entry{}
				touches := make([]api.Touch, len(resp.Touches))
				for i, t := range resp.Touches {
					touches[i] = t.Touch
					push[t.Entry.Position] = t.Push
					deploy[t.Entry.Position] = t.Deploy
				}
				touches = api.CollapseTouches(touches)
				if out == outJSON {
					if err := writeJSON(e.stdout, touches); err != nil {
						return err
					}
					return partial(sk, false)
				}
				w := e.stdout
				if len(touches) == 0 {
					fmt.Fprintf(w, "no apply on %s has touched %s: every apply found it unchanged, or it was never declared\n", node, resource)
					return partial(sk, false)
				}
				fmt.Fprintf(w, "%s on %s:\n", resource, node)
				for _, t := range touches {
					fmt.Fprintf(w, "  %s  %s", stamp(t.Entry.At), t.Action)
					if len(t.Fields) > 0 {
						fmt.Fprintf(w, " (changed: %s)", strings.Join(t.Fields, ", "))
					}
					if r := t.Entry.Run; r != nil {
						fmt.Fprintf(w, ", %d passes, %s", r.Count, span(r.From, r.To))
					}
					if t.Reason != "" {
						fmt.Fprintf(w, ": %s", t.Reason)
					}
					if r := t.Entry.Run; r != nil {
						fmt.Fprintf(w, "\n      by applies #%d to #%d of %s", r.FirstPosition, r.LastPosition, orDash(t.Entry.Declaration))
					} else {
						fmt.Fprintf(w, "\n      by apply #%d of %s", t.Entry.Position, orDash(t.Entry.Declaration))
					}
					if t.Entry.Correlation != "" {
						fmt.Fprintf(w, " (push %s: mesh timeline --correlation %s)", t.Entry.Correlation, t.Entry.Correlation)
					}
					fmt.Fprintln(w)
					// What the push behind it composed, and what it read
					// (every apply of a declaration shares its correlation:
					// those are left out).
					for _, en := range push[t.Entry.Position] {
						if t.Entry.Correlation == "" || en.Type == events.TypeApplyReported || en.Type == events.TypeReportDeliveredLate {
							continue
						}
						fmt.Fprintf(w, "      #%d %s %s\n", en.Position, en.Type, en.Summary)
					}
					// The build it runs, and what deployed it (seed 002).
					for _, en := range deploy[t.Entry.Position] {
						fmt.Fprintf(w, "      #%d %s %s (%s)\n", en.Position, en.Type, en.Summary, orDash(en.Actor))
					}
				}
				return partial(sk, false)
			})
		},
	}
	addOutput(cmd)
	return cmd
}
