package controller

import (
	"strings"

	"meshplane/api"
	"meshplane/events"
	"meshplane/projections"
)

// bindingsBehind is the binding behind each value of resource that the
// declaration touch t applied was given by one (a container's reaches,
// the file of one), as that declaration's compose recorded it
// (events.DeclarationComposed.Bindings), each with the last
// node.setting-set of the setting it read on the provider's node before
// the apply: who moved the value, and when.
func (c *Controller) bindingsBehind(d *declared, resource string, t projections.Touch) []api.Binding {
	composed, ok := d.composed[t.Entry.Declaration]
	if !ok {
		return nil
	}
	var out []api.Binding
	for _, b := range composed.Bindings {
		if b.Container != resource && b.Field != "file."+resource {
			continue
		}
		ab := api.Binding{Field: b.Field, Module: b.Module, Service: b.Service, Node: b.Node, Setting: b.Setting}
		if set, ok := lastSet(c.views.Timeline, b, t.Entry.Position); ok {
			e := entryOf(set)
			ab.Set = &e
		}
		out = append(out, ab)
	}
	return out
}

// lastSet is the last node.setting-set of b's setting on b's node before
// position, as the timeline shows it ("port.store set to 6852 on novox").
func lastSet(tl *projections.Timeline, b events.Bound, position uint64) (projections.Entry, bool) {
	sets := tl.Query(projections.Filter{Node: b.Node, Type: events.TypeNodeSettingSet, Before: position})
	for i := len(sets) - 1; i >= 0; i-- {
		if strings.HasPrefix(sets[i].Summary, b.Setting+" ") {
			return sets[i], true
		}
	}
	return projections.Entry{}, false
}
