package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/session"
)

// exitHeavy is mesh plan's exit code when a node's plan is heavy: it would
// create, replace or remove at least half of that node's resources, or of
// its containers (rule 7, events.Heavy), so a script or a CI gate stops
// before the push.
const exitHeavy = 4

// planCmd is mesh plan: what the next push would do, before it is done
// (seed 002: a data-path move and a build deployed by policy were both
// invisible until they took the forge down).
func (e *env) planCmd() *cobra.Command {
	var after []string
	cmd := &cobra.Command{
		Use:   "plan [NODE...]",
		Short: "what the next push would do on each node, and why: nothing is appended (exit 4: a heavy plan)",
		Long: `plan composes what the next push would send each node (every node when none is named)
and asks the node's agent what it would do with it, against what the node holds, without
applying it: per resource create, replace (with the fields that change, from what to what),
update in place, remove, or hold (with the reason), and how many are unchanged. A node that
does not answer is planned from the declaration last pushed to it, and says so: what it
found and holds is not known then. --after plans as if commands had run first (repeatable):
--after "deploy forge", --after "assign route-proxy novox". Nothing is stored.

A plan that would create, replace or remove at least half of a node's resources, or of its
containers (a container its last apply failed, created now, is a retry and not counted), is
heavy (a heavy pass, rule 7): its first line says so, and mesh plan exits 4.`,
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				resp, err := s.Service.Plan(cmd.Context(), api.PlanRequest{Nodes: args, After: after})
				if err != nil {
					return err
				}
				if out == outJSON {
					err = writeJSON(e.stdout, resp)
				} else {
					writePlan(e.stdout, resp)
				}
				if err == nil && resp.Heavy {
					return &exitError{exitHeavy}
				}
				return err
			})
		},
	}
	cmd.Flags().StringArrayVar(&after, "after", nil, "plan as if this `command` had run first (\"deploy forge\", \"assign route-proxy novox\"); repeatable")
	checkFlags(cmd.Flags(), map[string]flagCheck{"after": planAfter})
	addOutput(cmd)
	return cmd
}

// writePlan renders a plan for people (the JSON form is the public one). A
// heavy plan's headline comes first, before anything else.
func writePlan(w io.Writer, resp api.PlanResponse) {
	var heavy []string
	for _, np := range resp.Nodes {
		if np.Heavy {
			heavy = append(heavy, np.Node)
		}
	}
	if len(heavy) > 0 && len(resp.Nodes) > 1 {
		fmt.Fprintf(w, "HEAVY: the plan for %s would create, replace or remove at least half of the node's resources or containers (rule 7)\n\n", strings.Join(heavy, ", "))
	}
	if len(resp.After) > 0 {
		fmt.Fprintf(w, "as if first: %s\n\n", strings.Join(resp.After, "; "))
	}
	for i, np := range resp.Nodes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, np.Headline)
		switch np.Source {
		case api.PlanNotComposed:
			continue
		case api.PlanByDeclarations:
			fmt.Fprintf(w, "  NOT ASKED: %s's agent did not answer (%s): this is the diff against the declaration last pushed to it; what the node found and holds is not known\n", np.Node, np.NoAnswer)
		}
		if np.New {
			fmt.Fprintf(w, "  declaration %s (new)\n", np.Declaration)
		} else {
			fmt.Fprintf(w, "  declaration %s (the current one, sent again)\n", np.Declaration)
		}
		for _, warn := range np.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warn)
		}
		if np.Hosts != "" {
			fmt.Fprintf(w, "  %-8s hosts file, in place: %s\n", "update", np.Hosts)
		}
		for _, s := range np.Steps {
			fmt.Fprintf(w, "  %-8s %s (%s", s.Action, s.Name, s.Kind)
			if s.Module != "" {
				fmt.Fprintf(w, ", %s", s.Module)
			}
			fmt.Fprint(w, ")")
			switch {
			case len(s.Changes) > 0:
				fmt.Fprintln(w)
				for _, c := range s.Changes {
					fmt.Fprintf(w, "             %s: %s → %s\n", c.Field, orDash(c.From), orDash(c.To))
				}
			case s.Reason != "":
				fmt.Fprintf(w, ": %s\n", s.Reason)
			default:
				fmt.Fprintln(w)
			}
		}
		fmt.Fprintf(w, "  %d unchanged; the report would read: %s\n", np.Unchanged, np.Outcome.Summary())
	}
}
