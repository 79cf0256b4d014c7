package main

import (
	"context"
	"fmt"
	"strings"

	"meshplane/projections"
)

func cmdRoster(ctx context.Context, e *env, args []string) error {
	fs := e.flags("roster", "[--data DIR] [--json] [--history] [--diff FROM,TO] NODE")
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	history := fs.Bool("history", false, "every declaration composed for the node, and what each changed")
	diff := fs.String("diff", "", "what changed between two of the node's declarations (`FROM,TO`, e.g. novox/3,novox/7)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("name one node")
	}
	node := pos[0]
	return withLocal(ctx, *data, false, true, func(l *local) error {
		w := e.stdout
		switch {
		case *diff != "":
			from, to, ok := strings.Cut(*diff, ",")
			if !ok {
				return usagef("--diff wants FROM,TO")
			}
			d, err := l.views.Roster.Diff(node, from, to)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(w, d)
			}
			fmt.Fprintf(w, "%s → %s on %s\n", d.From, d.To, node)
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
		case *history:
			h, err := l.views.Roster.History(node)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(w, h)
			}
			tw := table(w)
			fmt.Fprintln(tw, "#\tAT\tDECLARATION\tDIGEST\tNAMES\tRESOURCES\tCHANGED")
			for i, d := range h {
				changed := "-"
				if i > 0 {
					df, err := l.views.Roster.Diff(node, h[i-1].Declaration, d.Declaration)
					if err != nil {
						return err
					}
					changed = describeDiff(df)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", d.Position, stamp(d.At), d.Declaration, short(d.Digest), len(d.Roster), len(d.Resources), changed)
			}
			return tw.Flush()
		default:
			d, err := l.views.Roster.Current(node)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(w, d)
			}
			fmt.Fprintf(w, "%s: declaration %s (%s), composed at %s, %d routed name(s):\n", node, d.Declaration, short(d.Digest), stamp(d.At), len(d.Roster))
			for _, n := range d.Roster {
				fmt.Fprintf(w, "  %s\n", n)
			}
			return nil
		}
	})
}

// describeDiff says in a few words what changed between two declarations.
func describeDiff(d projections.Diff) string {
	var parts []string
	for _, c := range []struct {
		sign  string
		names []string
	}{
		{"+", d.Added}, {"-", d.Removed},
	} {
		for _, n := range c.names {
			parts = append(parts, c.sign+n)
		}
	}
	if n := len(d.ResourcesAdded) + len(d.ResourcesRemoved) + len(d.ResourcesChanged); n > 0 {
		parts = append(parts, fmt.Sprintf("%d resource(s)", n))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

// short shortens a digest for a table.
func short(digest string) string {
	if i := strings.IndexByte(digest, ':'); i >= 0 && len(digest) > i+13 {
		return digest[:i+13]
	}
	return digest
}
