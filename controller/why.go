package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"meshplane/api"
	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
	"meshplane/events"
	"meshplane/projections"
)

// declared is what a node's stream says it was declared: each composed
// declaration by id, every spec by digest, and its applies in order.
type declared struct {
	composed map[string]events.DeclarationComposed
	specs    map[string]json.RawMessage
	applies  []appliedAt
}

type appliedAt struct {
	position    uint64
	declaration string
}

// readDeclared reads node's stream for declared.
func readDeclared(ctx context.Context, store events.Store, reg *events.Registry, node string) (*declared, error) {
	evs, err := store.ReadStream(ctx, events.NodeStream(node), 0, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", events.NodeStream(node), err)
	}
	d := &declared{composed: map[string]events.DeclarationComposed{}, specs: map[string]json.RawMessage{}}
	book := resourceBook(store, reg)
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeDeclarationComposed:
			p, err := decodeComposed(ctx, book, reg, ev)
			if err != nil {
				return nil, fmt.Errorf("read %s #%d: %w", events.NodeStream(node), ev.Version, err)
			}
			for dg, s := range p.Specs {
				d.specs[dg] = s
			}
			p.Specs = nil
			d.composed[p.Declaration] = p
		case events.TypeApplyReported:
			p, err := events.DecodeAs[events.ApplyReported](reg, ev)
			if err != nil {
				return nil, fmt.Errorf("read %s #%d: %w", events.NodeStream(node), ev.Version, err)
			}
			d.applies = append(d.applies, appliedAt{ev.Position, p.Declaration})
		}
	}
	return d, nil
}

// resourceBook resolves the resources_since of a node's composed
// declarations read in order, looking up through store's id index one
// carried before what was read.
func resourceBook(store events.Store, reg *events.Registry) *events.ResourceBook {
	ir, _ := store.(events.IDReader)
	return events.NewResourceBook(reg, ir)
}

// decodeComposed decodes ev, a declaration.composed read in its stream's
// order, with its resources in full (book): one whose reference does not
// resolve has them unknown (nil), noted in ResourcesUnknown.
func decodeComposed(ctx context.Context, book *events.ResourceBook, reg *events.Registry, ev events.Event) (events.DeclarationComposed, error) {
	p, err := events.DecodeAs[events.DeclarationComposed](reg, ev)
	if err != nil {
		return p, err
	}
	return book.Resolve(ctx, ev, p)
}

// changes is, for a touch that replaced or updated resource by the apply
// at position, what each of its fields was in the declaration the node
// applied before (its last apply of another declaration) and is in the
// apply's own (nodeplan.DeclaredChanges). None when either is unknown.
func (d *declared) changes(resource string, t projections.Touch) []api.Change {
	if t.Action != projections.ActionReplaced && t.Action != projections.ActionUpdated || len(t.Fields) == 0 {
		return nil
	}
	now := t.Entry.Declaration
	before := ""
	for i := len(d.applies) - 1; i >= 0; i-- {
		a := d.applies[i]
		if a.position < t.Entry.Position && a.declaration != now {
			before = a.declaration
			break
		}
	}
	have, ok1 := d.resource(before, resource)
	want, ok2 := d.resource(now, resource)
	if !ok1 || !ok2 {
		return nil
	}
	var out []api.Change
	for _, c := range nodeplan.DeclaredChanges(have, want, t.Fields) {
		out = append(out, api.Change(c))
	}
	return out
}

// resource is resource as declaration decl declared it.
func (d *declared) resource(decl, resource string) (r declaration.Resource, ok bool) {
	c, found := d.composed[decl]
	if !found {
		return r, false
	}
	for _, ref := range c.Resources {
		if ref.Name != resource {
			continue
		}
		raw, found := d.specs[ref.Digest]
		if !found {
			return r, false
		}
		r, ok, err := resourceOf(ref, raw)
		return r, ok && err == nil
	}
	return r, false
}
