package render

import (
	"fmt"
	"io"
	"strings"

	"meshplane/api"
)

// Plan shows what the next push would do on each node (mesh plan): a
// heavy plan's headline comes first, before anything else; its JSON is
// the response, the public form. The exit code of a heavy plan is the
// caller's (resp.Heavy).
func Plan(w io.Writer, f Format, resp api.PlanResponse) error {
	if f == JSON {
		return WriteJSON(w, resp)
	}
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
			against := "no declaration: the node has reported no apply"
			if np.Against != "" {
				against = "the declaration its last apply report applied, " + np.Against
			}
			fmt.Fprintf(w, "  NOT ASKED: %s's agent did not answer (%s): this is the diff against %s; what the node found and holds is not known\n", np.Node, np.NoAnswer, against)
			if np.Unapplied != "" {
				fmt.Fprintf(w, "  NOT APPLIED YET: %s was pushed to %s after it and no report has applied it\n", np.Unapplied, np.Node)
			}
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
	return nil
}
