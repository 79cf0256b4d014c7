package render

import (
	"fmt"
	"io"
	"strings"

	"meshplane/api"
)

// Diff shows what changed in the mesh between two moments (mesh diff): a
// header naming both ends, then each module and each node something
// changed on, one change a line, events with their position, time and
// actor. Its JSON is the api.MeshDiff. sk is what the answer left out.
func Diff(w io.Writer, f Format, d api.MeshDiff, sk api.Skipped) error {
	if f == JSON {
		if err := WriteJSON(w, d); err != nil {
			return err
		}
		return Partial(sk, false)
	}
	pf(w, "diff from #%d (%s) to #%d (%s): %d event(s)\n",
		d.From.Position, stamp(d.From.At), d.To.Position, stamp(d.To.At), d.Events)
	if len(d.Modules) == 0 && len(d.Nodes) == 0 {
		pf(w, "nothing changed\n")
	}
	for _, m := range d.Modules {
		pf(w, "module %s\n", m.Module)
		moduleDiff(w, m)
	}
	for _, n := range d.Nodes {
		pf(w, "node %s\n", n.Node)
		nodeDiff(w, n)
	}
	return Partial(sk, false)
}

// at is an event's position, actor and time, as a diff line starts
// ("#28 (operator:jo, 2026-11-30 10:03:00)", as why names a command).
func at(m api.DiffMark) string {
	if m.Actor == "" {
		return fmt.Sprintf("#%d (%s)", m.Position, stamp(m.At))
	}
	return fmt.Sprintf("#%d (%s, %s)", m.Position, m.Actor, stamp(m.At))
}

func moduleDiff(w io.Writer, m api.ModuleDiff) {
	for _, d := range m.Definitions {
		switch {
		case d.New:
			pf(w, "  %s: defined\n", at(d.DiffMark))
		case len(d.Fields) == 0:
			pf(w, "  %s: redefined, the same\n", at(d.DiffMark))
		default:
			pf(w, "  %s: redefined: %s\n", at(d.DiffMark), strings.Join(d.Fields, ", "))
		}
	}
	for _, b := range m.Builds {
		pf(w, "  %s: build recorded: %s %s\n", at(b.DiffMark), b.Name, short(b.Digest))
	}
	for _, d := range m.Deploys {
		var bs []string
		for _, b := range d.Builds {
			bs = append(bs, b.Name+" "+short(b.Digest))
		}
		pf(w, "  %s: deployed (%s): %s\n", at(d.DiffMark), d.By, orDash(strings.Join(bs, ", ")))
	}
	if m.Removed != nil {
		pf(w, "  %s: removed\n", at(*m.Removed))
	}
}

func nodeDiff(w io.Writer, n api.NodeDiff) {
	for _, e := range []struct {
		what string
		m    *api.DiffMark
	}{{"registered", n.Registered}, {"adopted", n.Adopted}} {
		if e.m != nil {
			pf(w, "  %s: %s\n", at(*e.m), e.what)
		}
	}
	for _, m := range n.Modules {
		pf(w, "  %s: %s %s\n", at(m.DiffMark), m.Type, m.Module)
	}
	if n.Removed != nil {
		pf(w, "  %s: removed\n", at(*n.Removed))
	}
	for _, c := range []struct {
		what string
		ch   *api.ValueChange
	}{{"sync", n.Sync}, {"health", n.Health}, {"declaration", n.Declaration}} {
		if c.ch != nil {
			pf(w, "  %s: %s -> %s\n", c.what, orDash(c.ch.From), orDash(c.ch.To))
		}
	}
	if n.Composed > 0 {
		pf(w, "  composed: %d declaration(s)\n", n.Composed)
	}
	if len(n.RosterAdded)+len(n.RosterRemoved) > 0 {
		pf(w, "  roster: %s\n", signed(n.RosterAdded, n.RosterRemoved))
	}
	resourceDiff(w, n)
	for _, h := range n.HoldsAppeared {
		pf(w, "  hold appeared: %s (%s): %s\n", h.Name, h.Module, h.Reason)
	}
	for _, h := range n.HoldsCleared {
		pf(w, "  hold cleared: %s (%s): %s\n", h.Name, h.Module, h.Reason)
	}
	for _, ep := range n.ChurnOpened {
		pf(w, "  churn: %s detected at #%d (%s)\n", episodeKind(ep), ep.Detected.Position, stamp(ep.Detected.At))
	}
	for _, ep := range n.ChurnClosed {
		pf(w, "  churn: %s ended at #%d (%s)\n", episodeKind(ep), ep.End.Position, stamp(ep.End.At))
	}
}

// resourceDiff writes a node's resources added, removed and changed, one
// a line, a changed one with each field that changed.
func resourceDiff(w io.Writer, n api.NodeDiff) {
	for _, r := range n.ResourcesAdded {
		pf(w, "  resource added: %s (%s, %s)\n", r.Name, r.Kind, r.Module)
	}
	for _, r := range n.ResourcesRemoved {
		pf(w, "  resource removed: %s (%s, %s)\n", r.Name, r.Kind, r.Module)
	}
	for _, r := range n.ResourcesChanged {
		pf(w, "  resource changed: %s (%s, %s): %s -> %s\n", r.Name, r.Kind, r.Module, short(r.From), short(r.To))
		for _, c := range r.Changes {
			pf(w, "    %s: %s -> %s\n", c.Field, orDash(c.From), orDash(c.To))
		}
	}
}

// signed is names added and removed, "+a +b -c".
func signed(added, removed []string) string {
	var parts []string
	for _, a := range added {
		parts = append(parts, "+"+a)
	}
	for _, r := range removed {
		parts = append(parts, "-"+r)
	}
	return strings.Join(parts, " ")
}

// episodeKind is "loop", "flip" or "loop+flip".
func episodeKind(ep api.Episode) string {
	var kind []string
	if ep.Loop {
		kind = append(kind, "loop")
	}
	if ep.Flip {
		kind = append(kind, "flip")
	}
	return orDash(strings.Join(kind, "+"))
}
