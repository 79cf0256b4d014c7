package agent

import (
	"context"
	"fmt"
	"slices"

	"meshplane/declaration"
	"meshplane/events"
)

// Preview is a dry run's answer: what Apply would do with a declaration,
// decided by the same Diff against the same observation, with nothing
// carried out and nothing kept. Its JSON is a wire format (the bus's
// dry-run reply, `mesh plan -o json`): fields may be added, never renamed.
//
//	{"node": "novox", "declaration": "novox/4", "digest": "sha256:…",
//	 "hosts": "content differs",
//	 "steps": [{"name": "web", "kind": "container", "module": "forge", "action": "replace",
//	            "fields": ["mounts./var/lib/forge"],
//	            "changes": [{"field": "mounts./var/lib/forge", "from": "/var/lib/forge", "to": "/srv/forge"}],
//	            "reason": "changed: mounts./var/lib/forge"}],
//	 "unchanged": 3,
//	 "outcome": {… the apply.reported the apply would make, if nothing failed …}}
type Preview struct {
	Node        string `json:"node"`
	Declaration string `json:"declaration"`
	Digest      string `json:"digest,omitempty"`
	// Hosts is why the hosts file would be rewritten in place; "" when it
	// would not. It is the node's own and never counted.
	Hosts string `json:"hosts,omitempty"`
	// Steps are the plan's steps that are not Unchanged, in plan order
	// (declared resources, then removals).
	Steps     []PreviewStep `json:"steps,omitempty"`
	Unchanged int           `json:"unchanged"`
	// Outcome is the report the apply would make if no runtime call
	// failed: the same buildOutcome as Apply's, so a plan and the pass
	// after it compare resource by resource.
	Outcome events.ApplyReported `json:"outcome"`
	// Images are the images the creates and replaces need, each present
	// on the node, pullable or unavailable (images.go), asked of a runtime
	// that pulls; absent on one that does not (the simulated runtime).
	Images []ImageCheck `json:"images,omitempty"`
}

// PreviewStep is one step of a Preview.
type PreviewStep struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Module  string   `json:"module,omitempty"`
	Action  string   `json:"action"` // create, replace, update, remove, hold, reject
	Fields  []string `json:"fields,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

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
		pv.Steps = append(pv.Steps, PreviewStep{
			Name: s.Name, Kind: s.Kind, Module: s.Module, Action: s.Action.String(),
			Fields: s.Fields, Changes: s.Changes, Reason: s.Reason,
		})
	}
	pv.Outcome = buildOutcome(node, d, p, result{failed: rejected(p)})
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

// DryRun is Apply without the doing: it observes the node and plans d
// (Diff, with the agent's State) exactly as Apply would now, and returns
// the Preview. It changes nothing on the node, in the State or in the
// outbox, and makes no report; it asks a runtime that pulls whether each
// image the plan needs is present or pullable (Preview.Images). Like
// Apply, it refuses a declaration for another node or with duplicate
// names, and fails when the node cannot be observed.
func (a *Agent) DryRun(ctx context.Context, d declaration.Declaration) (Preview, error) {
	plan, err := a.dryPlan(ctx, d)
	if err != nil {
		return Preview{}, err
	}
	pv := PreviewOf(a.cfg.Node, d, plan)
	// Registries are asked after the lock (an apply never waits on one),
	// all at once, within ImageCheckBudget.
	pv.Images = checkImages(ctx, a.cfg.Runtime, plan)
	return pv, nil
}

// dryPlan is DryRun's plan, under the agent's lock.
func (a *Agent) dryPlan(ctx context.Context, d declaration.Declaration) (Plan, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(d); err != nil {
		return Plan{}, err
	}
	if d.NamesRoster() {
		return Plan{}, fmt.Errorf("agent: dry run %s: names roster revision %d, which it does not carry: %w", d.ID, d.RosterRevision, declaration.ErrRosterNotHeld)
	}
	obs, err := Observe(ctx, a.cfg.Runtime, d)
	if err != nil {
		return Plan{}, fmt.Errorf("agent: dry run %s: %w", d.ID, err)
	}
	return Diff(d, obs, a.state), nil
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
			obs.Paths[r.Directory.Path] = PathState{PathInfo: PathInfo{Exists: true, Dir: true, Mode: orDefault(r.Directory.Mode, DefaultDirMode)}}
			st.Made = append(st.Made, r.Directory.Path)
		case r.File != nil:
			obs.Paths[r.File.Path] = PathState{PathInfo: PathInfo{Exists: true, Mode: orDefault(r.File.Mode, DefaultFileMode)}, Content: []byte(r.File.Content)}
		}
	}
	slices.Sort(st.Made)
	st.Made = slices.Compact(st.Made)
	return obs, st
}
