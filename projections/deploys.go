package projections

import (
	"fmt"
	"slices"

	"meshplane/events"
)

// DeployBehind answers the second half of "why was this container
// replaced?" when the answer is a new build (seed 002: a build is not a
// deployment, and the deployment must be found): for the apply at position
// on node that touched resource, the last module.deployed of the resource's
// module before that apply, preceded by the artifact.recorded of each build
// it deployed (the latest record of that digest before the deploy). Oldest
// first; none when the module has no deploy before the apply, or the apply
// is not in the timeline. An apply in a run that cannot be read back is an
// error wrapping ErrRunRead, never "none".
func (t *Timeline) DeployBehind(node, resource string, position uint64) ([]Entry, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	apply, _, _, ok, err := t.nodeEntry(node, position)
	if err != nil {
		return nil, fmt.Errorf("projections: the deploy behind %s on %s at %d: %w", resource, node, position, err)
	}
	if !ok {
		return nil, nil
	}
	if apply.typ != events.TypeApplyReported || apply.decl == nil {
		return nil, nil
	}
	module := ""
	for _, r := range apply.decl.resources {
		if r.Name == resource {
			module = r.Module
		}
	}
	if module == "" {
		return nil, nil
	}
	mod := t.byModule[module]
	var deploy *entry
	var at int
	for i := len(mod) - 1; i >= 0; i-- {
		e := t.at(int(mod[i]))
		if e.position < position && e.typ == events.TypeModuleDeployed {
			deploy, at = e, i
			break
		}
	}
	if deploy == nil {
		return nil, nil
	}
	d, _ := deploy.p.(events.ModuleDeployed)
	var out []Entry
	for _, b := range d.Builds {
		for i := at - 1; i >= 0; i-- {
			e := t.at(int(mod[i]))
			if r, ok := e.p.(events.ArtifactRecorded); ok && r.Name == b.Name && r.Digest == b.Digest {
				out = append(out, t.show(e))
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return int(a.Position) - int(b.Position) })
	return append(out, t.show(deploy)), nil
}
