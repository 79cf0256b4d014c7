package nodeplan

import (
	"fmt"
	"slices"
	"sort"

	"meshplane/declaration"
	"meshplane/events"
	"meshplane/wire"
)

// Preview is a dry run's answer (wire.Preview).
type Preview = wire.Preview

// PreviewOf turns a plan of d on node into its Preview. It is pure.
func PreviewOf(node string, d declaration.Declaration, p Plan) Preview {
	pv := Preview{Node: node, Declaration: d.ID, Digest: d.Digest}
	if p.Hosts.Write {
		pv.Hosts = p.Hosts.Reason
	}
	for _, s := range p.Steps {
		if s.Action == Unchanged {
			pv.Unchanged++
			continue
		}
		pv.Steps = append(pv.Steps, wire.PreviewStep{
			Name: s.Name, Kind: s.Kind, Module: s.Module, Action: s.Action.String(),
			Fields: s.Fields, Changes: s.Changes, Reason: s.Reason,
		})
	}
	pv.Outcome = Outcome(node, d, p, rejected(p))
	return pv
}

// rejected is the result a plan's Reject steps come to: each fails, as do
// carries them out.
func rejected(p Plan) map[string]error {
	failed := map[string]error{}
	for _, s := range p.Steps {
		if s.Action == Reject {
			failed[s.Name] = fmt.Errorf("%s %s: %s: %w", s.Kind, s.Name, s.Reason, ErrInvalid)
		}
	}
	return failed
}

// Declared is what a node would hold had it applied prev in full: its
// containers as declared, its directories and files at their declared modes
// and contents, its hosts file, and a State in which the agent made every
// directory (so nothing is found). Diffing a declaration against it is the
// declaration-to-declaration diff, the fallback of a plan whose node did not
// answer: it cannot know what the node found or holds. It is pure.
func Declared(prev declaration.Declaration) (Observed, State) {
	obs := Observed{Containers: map[string]Container{}, Paths: map[string]PathState{}}
	var st State
	if prev.ID != "" {
		obs.Paths[declaration.HostsPath] = PathState{PathInfo: PathInfo{Exists: true, Mode: HostsMode}, Content: []byte(prev.Hosts)}
	}
	for _, r := range prev.Resources {
		switch {
		case r.Container != nil:
			obs.Containers[r.Name] = Container{Name: r.Name, Module: r.Module, Digest: r.Digest, Spec: *r.Container}
		case r.Directory != nil:
			obs.Paths[r.Directory.Path] = PathState{PathInfo: PathInfo{Exists: true, Dir: true, Mode: ModeOr(r.Directory.Mode, DefaultDirMode)}}
			st.Made = append(st.Made, r.Directory.Path)
		case r.File != nil:
			obs.Paths[r.File.Path] = PathState{PathInfo: PathInfo{Exists: true, Mode: ModeOr(r.File.Mode, DefaultFileMode)}, Content: []byte(r.File.Content)}
		}
	}
	slices.Sort(st.Made)
	st.Made = slices.Compact(st.Made)
	return obs, st
}

// ModeOr is mode, or def when the declaration leaves mode at 0.
func ModeOr(mode, def uint32) uint32 {
	if mode == 0 {
		return def
	}
	return mode
}

// Outcome turns a carried-out plan into the apply.reported payload, in
// full but with empty lists left nil (absent on the wire).
// Sent counts the declaration's resources; Applied those neither held nor
// failed. The hosts file is never counted; a failed write of it is listed in
// Failed (under declaration.HostsPath), as is a failed removal.
func Outcome(node string, d declaration.Declaration, plan Plan, failed map[string]error) events.ApplyReported {
	out := events.ApplyReported{Node: node, Declaration: d.ID, Digest: d.Digest, Sent: len(d.Resources)}
	// A message is cut to the bound the controller's door takes
	// (events.MaxReportMessage): a longer one would have the report refused.
	if err, ok := failed[declaration.HostsPath]; ok {
		out.Failed = append(out.Failed, events.Failed{Name: declaration.HostsPath, Error: events.BoundText(err.Error(), events.MaxReportMessage)})
	}
	for _, s := range plan.Steps {
		if err, ok := failed[s.Name]; ok {
			out.Failed = append(out.Failed, events.Failed{Name: s.Name, Error: events.BoundText(err.Error(), events.MaxReportMessage)})
			continue
		}
		switch s.Action {
		case Unchanged:
			out.Unchanged++
		case Create:
			out.Created = append(out.Created, s.Name)
		case Replace:
			out.Replaced = append(out.Replaced, events.Replaced{Name: s.Name, Fields: s.Fields})
		case Update:
			out.Updated = append(out.Updated, events.Replaced{Name: s.Name, Fields: s.Fields})
		case Remove:
			out.Removed = append(out.Removed, s.Name)
		case Hold:
			out.Held = append(out.Held, events.Held{Name: s.Name, Module: s.Module, Reason: events.BoundText(s.Reason, events.MaxReportMessage)})
		}
		if s.Action != Remove && s.Action != Hold {
			out.Applied++
		}
	}
	sort.Strings(out.Created)
	sort.Strings(out.Removed)
	sort.Slice(out.Replaced, func(i, j int) bool { return out.Replaced[i].Name < out.Replaced[j].Name })
	sort.Slice(out.Updated, func(i, j int) bool { return out.Updated[i].Name < out.Updated[j].Name })
	sort.Slice(out.Held, func(i, j int) bool { return out.Held[i].Name < out.Held[j].Name })
	sort.Slice(out.Failed, func(i, j int) bool { return out.Failed[i].Name < out.Failed[j].Name })
	return out
}
