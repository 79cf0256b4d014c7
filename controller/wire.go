package controller

import (
	"meshplane/agent"
	"meshplane/api"
	"meshplane/events"
	"meshplane/projections"
)

// The one place the projections' and the agent's structs become the API's
// own (package api's views.go). Where a view has the same fields as its
// source, it is a Go conversion (api.Hold(h) ...): a field renamed or
// retyped on either side stops the build here, so a projection's rename can
// never silently change the API's JSON; the API's names are pinned on
// their side by api's fields.golden.

// refOf is the reference of a stored event.
func refOf(ev events.Event) api.EventRef {
	return api.EventRef{ID: ev.ID.String(), Stream: ev.Stream, Version: ev.Version, Position: ev.Position, Type: ev.Type, At: ev.At}
}

// diffOf is a roster diff in the API's form.
func diffOf(d projections.Diff) api.RosterDiff {
	return api.RosterDiff{
		From: d.From, To: d.To, Added: d.Added, Removed: d.Removed,
		ResourcesAdded: d.ResourcesAdded, ResourcesRemoved: d.ResourcesRemoved, ResourcesChanged: d.ResourcesChanged,
	}
}

// filterOf is the projections filter of a timeline request (without its
// cursor and limit).
func filterOf(r api.TimelineRequest) projections.Filter {
	return projections.Filter{
		Node: r.Node, Module: r.Module, Resource: r.Resource, Type: r.Type,
		Correlation: r.Correlation, From: r.Since, To: r.Until,
	}
}

// mapSlice converts each element of s with f; nil stays nil.
func mapSlice[T, U any](s []T, f func(T) U) []U {
	if s == nil {
		return nil
	}
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

func failureOf(f projections.Failure) api.Failure { return api.Failure(f) }

func statusOf(s projections.NodeStatus) api.NodeStatus {
	out := api.NodeStatus{
		Node: s.Node, Sync: s.Sync, Health: s.Health, Churn: s.Churn, Adopted: s.Adopted,
		Held: s.Held, Workload: s.Workload,
	}
	if s.Containers != nil {
		out.Containers = make(map[string]api.ContainerStatus, len(s.Containers))
		for k, c := range s.Containers {
			out.Containers[k] = api.ContainerStatus(c)
		}
	}
	if s.Modules != nil {
		out.Modules = make(map[string]api.ModuleStatus, len(s.Modules))
		for k, m := range s.Modules {
			out.Modules[k] = api.ModuleStatus(m)
		}
	}
	if s.Composed != nil {
		m := api.DeclMark(*s.Composed)
		out.Composed = &m
	}
	if s.ComposeFailed != nil {
		f := api.ComposeFailure(*s.ComposeFailed)
		out.ComposeFailed = &f
	}
	if s.Pushed != nil {
		m := api.DeclMark(*s.Pushed)
		out.Pushed = &m
	}
	if s.PushFailed != nil {
		f := api.PushFailure(*s.PushFailed)
		out.PushFailed = &f
	}
	if s.Applied != nil {
		out.Applied = &api.ApplyRecord{
			DeclMark: api.DeclMark(s.Applied.DeclMark), Report: s.Applied.Report, Summary: s.Applied.Summary,
			HoldsUnknown: s.Applied.HoldsUnknown,
		}
	}
	if s.ReportRefused != nil {
		r := api.ReportRefusal(*s.ReportRefused)
		out.ReportRefused = &r
	}
	return out
}

func resourcesOf(r projections.NodeResources) api.NodeResources {
	out := api.NodeResources{
		Node: r.Node, ReceivedAt: r.ReceivedAt, Removed: r.Removed, Partial: r.Partial,
		Resources: mapSlice(r.Resources, func(s projections.ResourceState) api.ResourceState { return api.ResourceState(s) }),
	}
	if r.Applied != nil {
		m := api.DeclMark(*r.Applied)
		out.Applied = &m
	}
	return out
}

func holdOf(h projections.Hold) api.Hold {
	return api.Hold{Name: h.Name, Module: h.Module, Reason: h.Reason, Since: api.HoldSince(h.Since)}
}

func entryOf(e projections.Entry) api.Entry {
	out := api.Entry{
		Position: e.Position, At: e.At, Stream: e.Stream, Type: e.Type, Actor: e.Actor,
		Correlation: e.Correlation, Node: e.Node, Modules: e.Modules, Resources: e.Resources,
		Declaration: e.Declaration, Digest: e.Digest, Heavy: e.Heavy, Churn: e.Churn, Summary: e.Summary,
		Idle: e.Idle, Held: e.Held, HoldsUnknown: e.HoldsUnknown,
	}
	if e.Run != nil {
		r := api.Run(*e.Run)
		out.Run = &r
	}
	return out
}

func entriesOf(es []projections.Entry) []api.Entry { return mapSlice(es, entryOf) }

func touchOf(t projections.Touch) api.Touch {
	return api.Touch{Entry: entryOf(t.Entry), Action: t.Action, Fields: t.Fields, Reason: t.Reason}
}

func composedOf(d projections.ComposedDecl) api.ComposedDecl {
	return api.ComposedDecl{
		Declaration: d.Declaration, Digest: d.Digest, Position: d.Position, At: d.At,
		Correlation: d.Correlation, Roster: d.Roster, Resources: d.Resources,
	}
}

func episodeOf(e projections.Episode) api.Episode {
	out := api.Episode{
		Node: e.Node, Loop: e.Loop, Flip: e.Flip,
		Start: api.Mark(e.Start), Detected: api.Mark(e.Detected),
		Passes: e.Passes, HeavyPasses: e.HeavyPasses, Flips: e.Flips,
		Evidence: api.Evidence{
			Declarations:     mapSlice(e.Evidence.Declarations, func(d projections.DeclRef) api.DeclRef { return api.DeclRef(d) }),
			MoreDeclarations: e.Evidence.MoreDeclarations,
			Fields:           e.Evidence.Fields,
			FailedReads:      mapSlice(e.Evidence.FailedReads, func(f projections.FailedRead) api.FailedRead { return api.FailedRead(f) }),
			RosterChanged:    e.Evidence.RosterChanged,
		},
	}
	if e.End != nil {
		m := api.Mark(*e.End)
		out.End = &m
	}
	return out
}

func comparedOf(c projections.Compared) api.Compared { return api.Compared(c) }

func previewOf(p agent.Preview) api.Preview {
	return api.Preview{
		Node: p.Node, Declaration: p.Declaration, Digest: p.Digest, Hosts: p.Hosts,
		Steps: mapSlice(p.Steps, func(s agent.PreviewStep) api.PreviewStep {
			return api.PreviewStep{
				Name: s.Name, Kind: s.Kind, Module: s.Module, Action: s.Action, Fields: s.Fields,
				Changes: mapSlice(s.Changes, func(c agent.Change) api.Change { return api.Change(c) }),
				Reason:  s.Reason,
			}
		}),
		Unchanged: p.Unchanged, Outcome: p.Outcome,
		Images: mapSlice(p.Images, func(i agent.ImageCheck) api.ImageCheck { return api.ImageCheck(i) }),
	}
}
