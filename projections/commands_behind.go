package projections

import (
	"fmt"
	"slices"

	"meshplane/events"
)

// commandTypes are the commands that change what a node's declaration
// holds for one resource: its module's definition and deploys, the module's
// assignment, take and release on the node, and the node's settings (a
// port's env is read from them at compose time).
var commandTypes = map[string]bool{
	events.TypeModuleDefined:  true,
	events.TypeModuleDeployed: true,
	events.TypeModuleAssigned: true,
	events.TypeModuleTaken:    true,
	events.TypeModuleReleased: true,
	events.TypeNodeSettingSet: true,
}

// CommandsBehind answers the first half of "why was this container
// replaced?": the commands that changed the declaration the apply at
// position on node applied, for resource. They are the module.defined,
// module.deployed, module.assigned, module.taken and module.released of the
// resource's module (the last three on node) and node's node.setting-set,
// after the compose of the declaration node applied before (the last apply
// of another declaration) and before the compose of the apply's own. With
// no earlier declaration applied, the latest of each type before that
// compose. Oldest first, each with its actor and time; none when the apply
// is not in the timeline, does not name the resource's declaration, or no
// command is found. An apply in a run that cannot be read back is an error
// wrapping ErrRunRead, never "none".
func (t *Timeline) CommandsBehind(node, resource string, position uint64) ([]Entry, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	apply, idx, k, ok, err := t.nodeEntry(node, position)
	if err != nil {
		return nil, fmt.Errorf("projections: the commands behind %s on %s at %d: %w", resource, node, position, err)
	}
	if !ok {
		return nil, nil
	}
	a, ok := applyOf(apply)
	if !ok || apply.decl == nil {
		return nil, nil
	}
	module := ""
	for _, r := range apply.decl.resources {
		if r.Name == resource {
			module = r.Module
		}
	}
	// Back from the apply: the compose of its declaration, then the last
	// apply of another one, then that one's compose.
	composedAt := func(from int, decl string) (int, bool) {
		for i := from; i >= 0; i-- {
			if c, ok := t.at(int(idx[i])).p.(*events.DeclarationComposed); ok && c.Declaration == decl {
				return i, true
			}
		}
		return 0, false
	}
	end, ok := composedAt(k-1, a.Declaration)
	if !ok {
		return nil, nil
	}
	to := t.at(int(idx[end])).position
	var from uint64
	bounded := false
	for i := k - 1; i >= 0; i-- {
		if b, ok := applyOf(t.at(int(idx[i]))); ok && b.Declaration != a.Declaration {
			if j, ok := composedAt(i-1, b.Declaration); ok {
				from, bounded = t.at(int(idx[j])).position, true
			}
			break
		}
	}
	var found []*entry
	take := func(list []int32, keep func(*entry) bool) {
		latest := map[string]*entry{}
		for _, i := range list {
			e := t.at(int(i))
			if e.position <= from || e.position >= to || !commandTypes[e.typ] || !keep(e) {
				continue
			}
			if bounded {
				found = append(found, e)
			} else {
				latest[e.typ] = e
			}
		}
		for _, e := range latest {
			found = append(found, e)
		}
	}
	if module != "" {
		take(t.byModule[module], func(e *entry) bool {
			return e.typ == events.TypeModuleDefined || e.typ == events.TypeModuleDeployed || e.node == node
		})
	}
	take(idx, func(e *entry) bool { return e.typ == events.TypeNodeSettingSet })
	slices.SortFunc(found, func(x, y *entry) int { return int(x.position) - int(y.position) })
	found = slices.CompactFunc(found, func(x, y *entry) bool { return x.position == y.position })
	out := make([]Entry, len(found))
	for i, e := range found {
		out[i] = t.show(e)
	}
	return out, nil
}
