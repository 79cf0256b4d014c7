package main

import (
	"context"
	"io"
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
			node := args[0]
			from, to, ok := strings.Cut(diff, ",")
			if diff != "" && !ok {
				return usagef("--diff wants FROM,TO")
			}
			// The answers carry no skipped events: they are known locally
			// only, once the query has folded (ask).
			switch {
			case diff != "":
				return ask(cmd, false, func(ctx context.Context, svc api.Service) (api.RosterDiff, error) {
					return svc.RosterDiff(ctx, api.RosterDiffRequest{Node: node, From: from, To: to})
				}, func(w io.Writer, f render.Format, d api.RosterDiff, sk api.Skipped) error {
					return render.RosterDiff(w, f, node, d, sk)
				})
			case history:
				return ask(cmd, false, func(ctx context.Context, svc api.Service) (api.RosterHistory, error) {
					return svc.RosterHistory(ctx, node)
				}, render.RosterHistory)
			}
			return ask(cmd, false, func(ctx context.Context, svc api.Service) (api.ComposedDecl, error) {
				return svc.Roster(ctx, node)
			}, func(w io.Writer, f render.Format, d api.ComposedDecl, sk api.Skipped) error {
				return render.Roster(w, f, node, d, sk)
			})
		},
	}
	cmd.Flags().BoolVar(&history, "history", false, "every declaration composed for the node, and what each changed")
	cmd.Flags().StringVar(&diff, "diff", "", "what changed between two of the node's declarations (`FROM,TO`, e.g. novox/3,novox/7)")
	addQuery(cmd)
	return cmd
}
