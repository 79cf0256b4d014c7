package main

import (
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) rosterCmd() *cobra.Command {
	var history bool
	var diff string
	cmd := &cobra.Command{
		Use:   "roster NODE",
		Short: "a node's roster: its current routed names, every declaration's, and what changed between two",
		Long: `A node's roster: its current routed names, every declaration's (--history), and
what changed between two.` + session.SlowLocal,
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(1, "name one node"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			node := args[0]
			from, to, ok := strings.Cut(diff, ",")
			if diff != "" && !ok {
				return usagef("--diff wants FROM,TO")
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				// The answers carry no skipped events: they are known
				// locally only, once the query has folded.
				ctx, w, f := cmd.Context(), cmd.OutOrStdout(), render.Format(out)
				switch {
				case diff != "":
					d, err := s.Service.RosterDiff(ctx, api.RosterDiffRequest{Node: node, From: from, To: to})
					if err != nil {
						return err
					}
					return render.RosterDiff(w, f, node, d, s.Skipped(api.Skipped{}))
				case history:
					h, err := s.Service.RosterHistory(ctx, node)
					if err != nil {
						return err
					}
					return render.RosterHistory(w, f, h, s.Skipped(api.Skipped{}))
				}
				d, err := s.Service.Roster(ctx, node)
				if err != nil {
					return err
				}
				return render.Roster(w, f, node, d, s.Skipped(api.Skipped{}))
			})
		},
	}
	cmd.Flags().BoolVar(&history, "history", false, "every declaration composed for the node, and what each changed")
	cmd.Flags().StringVar(&diff, "diff", "", "what changed between two of the node's declarations (`FROM,TO`, e.g. novox/3,novox/7)")
	addOutput(cmd)
	return cmd
}
