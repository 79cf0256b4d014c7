package projections

import (
	"fmt"
	"time"

	"meshplane/events"
)

// NodeResources is what runs on a node now, as far as its last apply
// report says: every resource of the declaration it applied, each with what
// that apply did to it and the state it left it in (the page's "what runs
// now, and is it healthy?").
type NodeResources struct {
	Node string `json:"node"`
	// Applied is the declaration of the last apply and the apply's own
	// time (the agent's clock); nil when the node never reported one, and
	// Resources is then empty.
	Applied *DeclMark `json:"applied,omitempty"`
	// ReceivedAt is when the controller received that report (its own
	// clock); zero for reports recorded without it.
	ReceivedAt time.Time `json:"received_at,omitzero"`
	// Resources are the applied declaration's resources, in its order.
	Resources []ResourceState `json:"resources"`
	// Removed are the resources the last apply removed (no longer
	// declared).
	Removed []string `json:"removed,omitempty"`
	// Partial is set when the applied declaration's resources are not
	// known (a snapshot left its compose out): Resources then lists only
	// those the report named, without their kind and module unless held.
	Partial bool `json:"partial,omitempty"`
}

// ResourceState is one declared resource as the last apply left it.
type ResourceState struct {
	Name   string `json:"name"`
	Kind   string `json:"kind,omitempty"`   // container, directory, file
	Module string `json:"module,omitempty"` // the module that declares it
	Digest string `json:"digest,omitempty"` // its spec digest in the applied declaration
	// State is ResourceRunning, ResourceInPlace, ResourceRestarted,
	// ResourceHeld or ResourceFailed; for a container whose node's agent
	// says how it runs, the engine's (a workload state: starting, running,
	// unhealthy, crash-looping, exited, oom-killed, vanished), with Reason
	// saying why (ContainerReason).
	State string `json:"state"`
	// Outcome is what the last apply did: ActionUnchanged, ActionCreated,
	// ActionReplaced, ActionUpdated, ActionHeld or ActionFailed.
	Outcome string   `json:"outcome"`
	Fields  []string `json:"fields,omitempty"` // the fields replaced or updated
	// Reason is why it is held, the failure's error, or (restarted) that
	// it was found stopped.
	Reason string `json:"reason,omitempty"`
}

// Resource states.
const (
	ResourceRunning = "running"  // a container the last apply left running (created, replaced, updated or unchanged)
	ResourceInPlace = "in-place" // a directory or file the last apply left as declared
	// ResourceRestarted: a container the last apply found stopped behind
	// the agent's back and started again (reported updated, "running").
	ResourceRestarted = "restarted"
	ResourceHeld      = "held"   // not touched until its module is taken
	ResourceFailed    = "failed" // its apply failed
)

// ActionUnchanged is the outcome of a resource the apply left as it was
// (the other outcomes are the Touch actions).
const ActionUnchanged = "unchanged"

// FieldRunning is the field an apply reports updated on a container it
// found stopped and started (agent.Diff).
const FieldRunning = "running"

// ReasonRestarted is the reason of a ResourceRestarted resource.
const ReasonRestarted = "found stopped behind the agent's back; started again by the last apply"

// Resources returns every resource of node's last applied declaration
// with its state (NodeResources). A node status does not know is
// ErrUnknownNode; a node that never reported an apply has no resources.
func (s *Status) Resources(node string) (NodeResources, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.nodes[node]
	if !ok {
		return NodeResources{}, fmt.Errorf("projections: resources of %q: %w", node, ErrUnknownNode)
	}
	out := NodeResources{Node: node, Resources: []ResourceState{}}
	a := n.applied
	if a == nil {
		return out, nil
	}
	mark := a.DeclMark
	out.Applied = &mark
	out.ReceivedAt = a.Report.ReceivedAt
	out.Removed = append([]string(nil), a.Report.Removed...)
	outcomes := outcomesOf(a.Report)
	d, _ := n.decls.peek(a.Declaration)
	if d == nil {
		out.Partial = true
		for _, name := range outcomes.order {
			r := outcomes.by[name]
			out.Resources = append(out.Resources, stateOf(events.ResourceRef{Name: name, Module: r.module}, r))
		}
		return out, nil
	}
	for _, ref := range d.resources {
		r, ok := outcomes.by[ref.Name]
		if !ok {
			r = outcome{action: ActionUnchanged}
		}
		st := stateOf(ref, r)
		if c, ok := n.containers[ref.Name]; ok && ref.Kind == "container" && st.State != ResourceFailed && st.State != ResourceHeld {
			// What the engine runs, as the agent last said it changed.
			st.State, st.Reason = c.State, ContainerReason(c)
		}
		out.Resources = append(out.Resources, st)
	}
	return out, nil
}

// ContainerReason says in one line why a container is in its state: "exit
// code 1 at 19:00:02, the 14th restart since 18:59:30: <its last log
// line>", "health check failing: <the probe's output>"; "" for a
// container that runs or starts.
func ContainerReason(c ContainerStatus) string {
	var s string
	switch c.State {
	case events.WorkloadCrashLooping:
		s = fmt.Sprintf("exit code %d at %s, the %s restart since %s", c.ExitCode, c.At.UTC().Format(time.TimeOnly), ordinal(c.Restarts), c.Since.UTC().Format(time.TimeOnly))
	case events.WorkloadExited:
		s = fmt.Sprintf("exit code %d at %s", c.ExitCode, c.At.UTC().Format(time.TimeOnly))
	case events.WorkloadOOMKilled:
		s = fmt.Sprintf("killed for lack of memory at %s (exit code %d)", c.At.UTC().Format(time.TimeOnly), c.ExitCode)
	case events.WorkloadVanished:
		return fmt.Sprintf("removed from the engine by something outside the mesh, seen at %s", c.At.UTC().Format(time.TimeOnly))
	case events.WorkloadUnhealthy:
		s = "health check failing since " + c.At.UTC().Format(time.TimeOnly)
		if o := LastLine(c.Output); o != "" {
			s += ": " + o
		}
		return s
	case events.WorkloadRunning:
		if c.Restarts > 0 {
			return fmt.Sprintf("running again since %s, after %d restarts from %s", c.At.UTC().Format(time.TimeOnly), c.Restarts, c.Since.UTC().Format(time.TimeOnly))
		}
		return ""
	default:
		return ""
	}
	if c.LogLine != "" {
		s += ": " + c.LogLine
	}
	return s
}

// ordinal is n as an English ordinal: 1st, 2nd, 3rd, 14th, 22nd.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// outcome is what one apply did to one resource.
type outcome struct {
	action string
	fields []string
	reason string
	module string // a held resource's module, as the report names it
}

// outcomes is what an apply did to each resource its report names, by
// name, and the names in the report's order.
type outcomes struct {
	by    map[string]outcome
	order []string
}

// outcomesOf reads a report's lists. A name in more than one list keeps
// the worst: failed over held over replaced over updated over created.
func outcomesOf(a events.ApplyReported) outcomes {
	o := outcomes{by: map[string]outcome{}}
	set := func(name string, r outcome) {
		if _, ok := o.by[name]; !ok {
			o.order = append(o.order, name)
		}
		o.by[name] = r
	}
	for _, name := range a.Created {
		set(name, outcome{action: ActionCreated})
	}
	for _, u := range a.Updated {
		set(u.Name, outcome{action: ActionUpdated, fields: u.Fields})
	}
	for _, r := range a.Replaced {
		set(r.Name, outcome{action: ActionReplaced, fields: r.Fields})
	}
	for _, h := range a.Held {
		set(h.Name, outcome{action: ActionHeld, reason: h.Reason, module: h.Module})
	}
	for _, f := range a.Failed {
		set(f.Name, outcome{action: ActionFailed, reason: f.Error})
	}
	return o
}

// stateOf is the state a resource was left in by the outcome r.
func stateOf(ref events.ResourceRef, r outcome) ResourceState {
	st := ResourceState{
		Name: ref.Name, Kind: ref.Kind, Module: ref.Module, Digest: ref.Digest,
		Outcome: r.action, Fields: r.fields, Reason: r.reason,
	}
	if st.Module == "" {
		st.Module = r.module
	}
	switch {
	case r.action == ActionFailed:
		st.State = ResourceFailed
	case r.action == ActionHeld:
		st.State = ResourceHeld
	case r.action == ActionUpdated && len(r.fields) == 1 && r.fields[0] == FieldRunning:
		st.State, st.Reason = ResourceRestarted, ReasonRestarted
	case ref.Kind == "" || ref.Kind == "container":
		st.State = ResourceRunning
	default:
		st.State = ResourceInPlace
	}
	return st
}
