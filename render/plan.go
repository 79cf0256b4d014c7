package render

import (
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
		pf(w, "HEAVY: the plan for %s would create, replace or remove at least half of the node's resources or containers (rule 7)\n\n", strings.Join(heavy, ", "))
	}
	if len(resp.After) > 0 {
		pf(w, "as if first: %s\n\n", strings.Join(resp.After, "; "))
	}
	for i, np := range resp.Nodes {
		if i > 0 {
			pln(w)
		}
		pln(w, np.Headline)
		switch np.Source {
		case api.PlanNotComposed:
			continue
		case api.PlanByDeclarations:
			against := "no declaration: the node has reported no apply"
			if np.Against != "" {
				against = "the declaration its last apply report applied, " + np.Against
			}
			pf(w, "  NOT ASKED: %s's agent did not answer (%s): this is the diff against %s; what the node found and holds is not known\n", np.Node, np.NoAnswer, against)
			if np.Unapplied != "" {
				pf(w, "  NOT APPLIED YET: %s was pushed to %s after it and no report has applied it\n", np.Unapplied, np.Node)
			}
		}
		if np.New {
			pf(w, "  declaration %s (new)\n", np.Declaration)
		} else {
			pf(w, "  declaration %s (the current one, sent again)\n", np.Declaration)
		}
		for _, warn := range np.Warnings {
			pf(w, "  warning: %s\n", warn)
		}
		if np.Hosts != "" {
			pf(w, "  %-8s hosts file, in place: %s\n", "update", np.Hosts)
		}
		for _, s := range np.Steps {
			pf(w, "  %-8s %s (%s", s.Action, s.Name, s.Kind)
			if s.Module != "" {
				pf(w, ", %s", s.Module)
			}
			pf(w, ")")
			switch {
			case len(s.Changes) > 0:
				pln(w)
				for _, c := range s.Changes {
					pf(w, "             %s: %s → %s\n", c.Field, orDash(c.From), orDash(c.To))
				}
			case s.Reason != "":
				pf(w, ": %s\n", s.Reason)
			default:
				pln(w)
			}
		}
		planImages(w, np.Images)
		pf(w, "  %d unchanged; the report would read: %s\n", np.Unchanged, np.Outcome.Summary())
	}
	return nil
}

// planImages says what the node's agent found of each image the plan
// needs; an image that cannot be had first, loudly: the apply would fail
// its containers and leave what they replace running.
func planImages(w io.Writer, images []api.ImageCheck) {
	for _, ic := range images {
		if ic.State == "unavailable" {
			pf(w, "  IMAGE UNAVAILABLE %s (for %s): %s; the apply would fail them and stop nothing\n", ic.Image, strings.Join(ic.Containers, ", "), orDash(ic.Detail))
		}
	}
	for _, ic := range images {
		switch ic.State {
		case "unavailable":
		case "unknown":
			pf(w, "  image    %s (for %s): not known: %s\n", ic.Image, strings.Join(ic.Containers, ", "), orDash(ic.Detail))
		default:
			pf(w, "  image    %s (for %s): %s\n", ic.Image, strings.Join(ic.Containers, ", "), ic.State)
		}
	}
}
