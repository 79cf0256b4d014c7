package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"meshplane/events"
	"meshplane/projections"
)

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// span is a run's time range: "2026-11-30 00:00 to 23:55", the date of the
// end only when it differs, to the second when both fall in one minute.
func span(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	layout := "15:04"
	if from.Truncate(time.Minute).Equal(to.Truncate(time.Minute)) {
		layout = "15:04:05"
	}
	end := to.Format(layout)
	if from.Format("2006-01-02") != to.Format("2006-01-02") {
		end = to.Format("2006-01-02 " + layout)
	}
	return from.Format("2006-01-02 "+layout) + " to " + end
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdStatus(ctx context.Context, e *env, args []string) error {
	fs := e.flags("status", "[--data DIR] [--json] [NODE...]")
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	return withLocal(ctx, *data, false, true, func(l *local) error {
		nodes := l.nodesOr(pos)
		var all []projections.NodeStatus
		for _, n := range nodes {
			st, err := l.views.Status.Of(n)
			if err != nil {
				return err
			}
			all = append(all, st)
		}
		if *asJSON {
			return writeJSON(e.stdout, all)
		}
		tw := table(e.stdout)
		fmt.Fprintln(tw, "NODE\tSYNC\tHEALTH\tDECLARATION\tLAST APPLY")
		for _, st := range all {
			decl, apply := "-", "-"
			if st.Pushed != nil {
				decl = st.Pushed.Declaration
			}
			if st.Applied != nil {
				apply = st.Applied.Summary
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Node, st.Sync, health(st), decl, apply)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, st := range all {
			if st.ComposeFailed != nil {
				fmt.Fprintf(e.stdout, "\n%s: last compose failed at %s: %s\n", st.Node, stamp(st.ComposeFailed.At), st.ComposeFailed.Error)
			}
			if st.PushFailed != nil {
				fmt.Fprintf(e.stdout, "\n%s: last push of %s failed at %s: %s\n", st.Node, st.PushFailed.Declaration, stamp(st.PushFailed.At), st.PushFailed.Error)
			}
		}
		l.noteSkipped(e.stdout)
		return nil
	})
}

// health is a node's health with its held counts ("waiting-on-take
// (route-proxy: 13, photos: 3)").
func health(st projections.NodeStatus) string {
	if len(st.Held) == 0 || st.Health != projections.HealthWaitingOnTake {
		return st.Health
	}
	var parts []string
	for _, h := range st.Held {
		parts = append(parts, fmt.Sprintf("%s: %d", h.Module, h.Count))
	}
	return fmt.Sprintf("%s (%s)", st.Health, strings.Join(parts, ", "))
}

func cmdNodeShow(ctx context.Context, e *env, args []string) error {
	fs := e.flags("node show", "[--data DIR] [--json] NODE")
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("name one node")
	}
	node := pos[0]
	return withLocal(ctx, *data, false, true, func(l *local) error {
		st, err := l.views.Status.Of(node)
		if err != nil {
			return err
		}
		holds, err := l.views.Holds.Of(node)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e.stdout, map[string]any{"status": st, "holds": holds})
		}
		w := e.stdout
		fmt.Fprintf(w, "node     %s\n", st.Node)
		fmt.Fprintf(w, "adopted  %v\n", st.Adopted)
		fmt.Fprintf(w, "sync     %s\n", st.Sync)
		fmt.Fprintf(w, "health   %s\n", health(st))
		if st.Pushed != nil {
			fmt.Fprintf(w, "pushed   %s at %s\n", st.Pushed.Declaration, stamp(st.Pushed.At))
		}
		if st.Applied != nil {
			fmt.Fprintf(w, "applied  %s at %s: %s\n", st.Applied.Declaration, stamp(st.Applied.At), st.Applied.Summary)
		}
		if st.ComposeFailed != nil {
			fmt.Fprintf(w, "compose  failed at %s: %s\n", stamp(st.ComposeFailed.At), st.ComposeFailed.Error)
		}
		fmt.Fprintln(w, "\nmodules:")
		tw := table(w)
		fmt.Fprintln(tw, "  MODULE\tASSIGNED\tTAKEN\tSTATE\tHELD\tFAILED")
		names := make([]string, 0, len(st.Modules))
		for m := range st.Modules {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			ms := st.Modules[m]
			fmt.Fprintf(tw, "  %s\t%v\t%v\t%s\t%d\t%d\n", m, ms.Assigned, ms.Taken, ms.State, ms.Held, ms.Failed)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nholds (from the node's own apply reports): %d\n", len(holds))
		for _, h := range holds {
			fmt.Fprintf(w, "  %s (%s): %s\n", h.Name, h.Module, h.Reason)
		}
		return nil
	})
}

func cmdTimeline(ctx context.Context, e *env, args []string) error {
	fs := e.flags("timeline", "[flags]")
	data := dataFlag(fs)
	var f projections.Filter
	fs.StringVar(&f.Node, "node", "", "only events of this `node`")
	fs.StringVar(&f.Module, "module", "", "only events naming this `module`")
	fs.StringVar(&f.Resource, "resource", "", "only applies that touched this `resource`")
	fs.StringVar(&f.Type, "type", "", "only events of this `type` (apply.reported, ...)")
	fs.StringVar(&f.Correlation, "correlation", "", "only events of this push (`id`)")
	since := fs.String("since", "", "only events at or after this `time` (RFC 3339)")
	until := fs.String("until", "", "only events before this `time` (RFC 3339)")
	fs.IntVar(&f.Limit, "limit", 0, "only the last `N` matches")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	for _, b := range []struct {
		s string
		t *time.Time
	}{{*since, &f.From}, {*until, &f.To}} {
		if b.s == "" {
			continue
		}
		if *b.t, err = time.Parse(time.RFC3339, b.s); err != nil {
			return usagef("%q is not an RFC 3339 time (2026-09-29T23:02:00Z)", b.s)
		}
	}
	return withLocal(ctx, *data, false, true, func(l *local) error {
		entries := projections.Collapse(l.views.Timeline.Query(f))
		if *asJSON {
			return writeJSON(e.stdout, entries)
		}
		tw := table(e.stdout)
		fmt.Fprintln(tw, "#\tAT\tNODE\tTYPE\tACTOR\tSUMMARY")
		for _, en := range entries {
			summary := en.Summary
			if r := en.Run; r != nil {
				what := "times"
				if en.Type == events.TypeApplyReported {
					what = "passes"
				}
				if en.Idle() {
					summary += "; nothing changed"
				} else {
					summary += "; the same"
				}
				summary += fmt.Sprintf(", %d %s, %s, #%d to #%d", r.Count, what, span(r.From, r.To), r.FirstPosition, r.LastPosition)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", en.Position, stamp(en.At), orDash(en.Node), en.Type, orDash(en.Actor), summary)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		l.noteSkipped(e.stdout)
		return nil
	})
}

func cmdWhy(ctx context.Context, e *env, args []string) error {
	fs := e.flags("why", "[--data DIR] [--json] NODE RESOURCE")
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want NODE RESOURCE")
	}
	node, resource := pos[0], pos[1]
	return withLocal(ctx, *data, false, true, func(l *local) error {
		touches, err := l.views.Timeline.Why(node, resource)
		if err != nil {
			return err
		}
		touches = projections.CollapseTouches(touches)
		if *asJSON {
			return writeJSON(e.stdout, touches)
		}
		if len(touches) == 0 {
			fmt.Fprintf(e.stdout, "no apply on %s has touched %s: every apply found it unchanged, or it was never declared\n", node, resource)
			return nil
		}
		fmt.Fprintf(e.stdout, "%s on %s:\n", resource, node)
		for _, t := range touches {
			fmt.Fprintf(e.stdout, "  %s  %s", stamp(t.Entry.At), t.Action)
			if len(t.Fields) > 0 {
				fmt.Fprintf(e.stdout, " (changed: %s)", strings.Join(t.Fields, ", "))
			}
			if r := t.Entry.Run; r != nil {
				fmt.Fprintf(e.stdout, ", %d passes, %s", r.Count, span(r.From, r.To))
			}
			if t.Reason != "" {
				fmt.Fprintf(e.stdout, ": %s", t.Reason)
			}
			if r := t.Entry.Run; r != nil {
				fmt.Fprintf(e.stdout, "\n      by applies #%d to #%d of %s", r.FirstPosition, r.LastPosition, orDash(t.Entry.Declaration))
			} else {
				fmt.Fprintf(e.stdout, "\n      by apply #%d of %s", t.Entry.Position, orDash(t.Entry.Declaration))
			}
			if t.Entry.Correlation != "" {
				fmt.Fprintf(e.stdout, " (push %s: mesh timeline --correlation %s)", t.Entry.Correlation, t.Entry.Correlation)
			}
			fmt.Fprintln(e.stdout)
			// What the push behind it composed, and what it read (every
			// apply of a declaration shares its correlation: those are
			// left out).
			for _, en := range l.views.Timeline.Query(projections.Filter{Node: node, Correlation: t.Entry.Correlation}) {
				if t.Entry.Correlation == "" || en.Type == events.TypeApplyReported || en.Type == events.TypeReportDeliveredLate {
					continue
				}
				fmt.Fprintf(e.stdout, "      #%d %s %s\n", en.Position, en.Type, en.Summary)
			}
		}
		return nil
	})
}

func cmdChurn(ctx context.Context, e *env, args []string) error {
	fs := e.flags("churn", "[--data DIR] [--json] [NODE...]")
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	return withLocal(ctx, *data, false, true, func(l *local) error {
		nodes := l.nodesOr(pos)
		all := map[string][]projections.Episode{}
		for _, n := range nodes {
			all[n] = l.views.Churn.Episodes(n)
		}
		if *asJSON {
			return writeJSON(e.stdout, all)
		}
		any := false
		for _, n := range nodes {
			for _, ep := range all[n] {
				any = true
				state := "cleared"
				if ep.Active() {
					state = "ACTIVE"
				}
				kind := []string{}
				if ep.Loop {
					kind = append(kind, "loop")
				}
				if ep.Flip {
					kind = append(kind, "flip")
				}
				fmt.Fprintf(e.stdout, "%s: %s %s, from #%d (%s), detected at #%d, %d passes, %d heavy\n",
					n, state, strings.Join(kind, "+"), ep.Start.Position, stamp(ep.Start.At), ep.Detected.Position, ep.Passes, ep.HeavyPasses)
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetIndent("    ", "  ")
				if err := enc.Encode(ep.Evidence); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "    evidence: %s", b.String())
			}
		}
		if !any {
			fmt.Fprintln(e.stdout, "no churn: no heavy passes in a row and no flips")
		}
		return nil
	})
}

func cmdRebuild(ctx context.Context, e *env, args []string) error {
	fs := e.flags("rebuild", "[--data DIR]")
	data := dataFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	return withLocal(ctx, *data, false, false, func(l *local) error {
		start := time.Now()
		if err := l.runner.Rebuild(ctx); err != nil {
			return err
		}
		took := time.Since(start)
		first, err := json.Marshal(l.views)
		if err != nil {
			return err
		}
		if err := l.runner.Rebuild(ctx); err != nil {
			return err
		}
		second, err := json.Marshal(l.views)
		if err != nil {
			return err
		}
		if !bytes.Equal(first, second) {
			return fmt.Errorf("two rebuilds differ: the projections are not deterministic (a bug: please report it)")
		}
		n := l.runner.Position()
		fmt.Fprintf(e.stdout, "rebuilt every projection from %d events in %s; a second rebuild is byte-identical (%d bytes)\n",
			n, took.Round(time.Millisecond), len(first))
		l.noteSkipped(e.stdout)
		return nil
	})
}
