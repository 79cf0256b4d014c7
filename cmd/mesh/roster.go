package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/projections"
	"meshplane/session"
)

func (e *env) rosterCmd() *cobra.Command {
	var history bool
	var diff string
	cmd := &cobra.Command{
		Use:   "roster NODE",
		Short: "a node's roster: its current routed names, every declaration's, and what changed between two",
		Long: `A node's roster: its current routed names, every declaration's (--history), and
what changed between two.` + slowLocal,
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usagef("name one node")
			}
			node := args[0]
			from, to, ok := strings.Cut(diff, ",")
			if diff != "" && !ok {
				return usagef("--diff wants FROM,TO")
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				var err error
				switch {
				case diff != "":
					err = e.rosterDiff(cmd, s, out, api.RosterDiffRequest{Node: node, From: from, To: to})
				case history:
					err = e.rosterHistory(cmd, s, out, node)
				default:
					err = e.rosterCurrent(cmd, s, out, node)
				}
				if err != nil {
					return err
				}
				return partial(s.Skipped(api.Skipped{}), false)
			})
		},
	}
	cmd.Flags().BoolVar(&history, "history", false, "every declaration composed for the node, and what each changed")
	cmd.Flags().StringVar(&diff, "diff", "", "what changed between two of the node's declarations (`FROM,TO`, e.g. novox/3,novox/7)")
	addOutput(cmd)
	return cmd
}

func (e *env) rosterDiff(cmd *cobra.Command, s *session.Session, out string, req api.RosterDiffRequest) error {
	d, err := s.Service.RosterDiff(cmd.Context(), req)
	if err != nil {
		return err
	}
	w := e.stdout
	if out == outJSON {
		// The JSON form is the projection's, as it was before the API.
		return writeJSON(w, projections.Diff{
			From: d.From, To: d.To, Added: d.Added, Removed: d.Removed,
			ResourcesAdded: d.ResourcesAdded, ResourcesRemoved: d.ResourcesRemoved, ResourcesChanged: d.ResourcesChanged,
		})
	}
	fmt.Fprintf(w, "%s → %s on %s\n", d.From, d.To, req.Node)
	for _, line := range []struct {
		label string
		names []string
	}{
		{"names added", d.Added}, {"names removed", d.Removed},
		{"resources added", d.ResourcesAdded}, {"resources removed", d.ResourcesRemoved},
		{"resources changed", d.ResourcesChanged},
	} {
		fmt.Fprintf(w, "  %-18s %s\n", line.label+":", orDash(strings.Join(line.names, ", ")))
	}
	return nil
}

func (e *env) rosterHistory(cmd *cobra.Command, s *session.Session, out, node string) error {
	h, err := s.Service.RosterHistory(cmd.Context(), node)
	if err != nil {
		return err
	}
	w := e.stdout
	if out == outJSON {
		decls := make([]api.ComposedDecl, len(h.Declarations))
		for i, d := range h.Declarations {
			decls[i] = d.ComposedDecl
		}
		return writeJSON(w, decls)
	}
	tw := table(w)
	fmt.Fprintln(tw, "#\tAT\tDECLARATION\tDIGEST\tNAMES\tRESOURCES\tCHANGED")
	for _, d := range h.Declarations {
		changed := "-"
		if d.Changed != nil {
			changed = describeDiff(*d.Changed)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", d.Position, stamp(d.At), d.Declaration, short(d.Digest), len(d.Roster), len(d.Resources), changed)
	}
	return tw.Flush()
}

func (e *env) rosterCurrent(cmd *cobra.Command, s *session.Session, out, node string) error {
	d, err := s.Service.Roster(cmd.Context(), node)
	if err != nil {
		return err
	}
	w := e.stdout
	if out == outJSON {
		return writeJSON(w, d)
	}
	fmt.Fprintf(w, "%s: declaration %s (%s), composed at %s, %d routed name(s):\n", node, d.Declaration, short(d.Digest), stamp(d.At), len(d.Roster))
	for _, n := range d.Roster {
		fmt.Fprintf(w, "  %s\n", n)
	}
	return nil
}
