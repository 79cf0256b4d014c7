package render

import (
	"io"
	"strings"

	"meshplane/api"
)

// Roster shows a node's current declaration and its routed names (mesh
// roster NODE). sk is what the answer left out.
func Roster(w io.Writer, f Format, node string, d api.ComposedDecl, sk api.Skipped) error {
	if f == JSON {
		if err := WriteJSON(w, d); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	pf(w, "%s: declaration %s (%s), composed at %s, %d routed name(s):\n", node, d.Declaration, short(d.Digest), stamp(d.At), len(d.Roster))
	for _, n := range d.Roster {
		pf(w, "  %s\n", n)
	}
	return Partial(sk, false)
}

// RosterHistory shows every declaration composed for a node and what each
// changed (mesh roster --history); its JSON is the declarations, without
// what changed. sk is what the answer left out.
func RosterHistory(w io.Writer, f Format, h api.RosterHistory, sk api.Skipped) error {
	if f == JSON {
		decls := make([]api.ComposedDecl, len(h.Declarations))
		for i, d := range h.Declarations {
			decls[i] = d.ComposedDecl
		}
		if err := writeJSONAt(w, h.AsOf, "declarations", decls); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	tw := table(w)
	pf(tw, "#\tAT\tDECLARATION\tDIGEST\tNAMES\tRESOURCES\tCHANGED\n")
	for _, d := range h.Declarations {
		changed := "-"
		if d.Changed != nil {
			changed = describeDiff(*d.Changed)
		}
		pf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", d.Position, stamp(d.At), d.Declaration, short(d.Digest), len(d.Roster), len(d.Resources), changed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return Partial(sk, false)
}

// diffJSON is RosterDiff's JSON form: the roster projection's Diff as it
// was printed before the API had types of its own (Go field names, no
// tags), kept so that scripts reading it go on working.
type diffJSON struct {
	From, To         string
	Added, Removed   []string
	ResourcesAdded   []string
	ResourcesRemoved []string
	ResourcesChanged []string
	AsOf             *api.Moment `json:"as_of,omitempty"`
}

// RosterDiff shows what changed on a node between two of its declarations
// (mesh roster --diff FROM,TO). sk is what the answer left out.
func RosterDiff(w io.Writer, f Format, node string, d api.RosterDiff, sk api.Skipped) error {
	if f == JSON {
		if err := WriteJSON(w, diffJSON(d)); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	pf(w, "%s → %s on %s\n", d.From, d.To, node)
	for _, line := range []struct {
		label string
		names []string
	}{
		{"names added", d.Added}, {"names removed", d.Removed},
		{"resources added", d.ResourcesAdded}, {"resources removed", d.ResourcesRemoved},
		{"resources changed", d.ResourcesChanged},
	} {
		pf(w, "  %-18s %s\n", line.label+":", orDash(strings.Join(line.names, ", ")))
	}
	return Partial(sk, false)
}
