package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// ErrResourcesUnresolved means a declaration.composed stored by reference
// (resources_since) names no declaration.composed of its node that
// carries its resources: the id is stored under no event, under another
// node's, under an event of another type, or under one that is itself by
// reference.
var ErrResourcesUnresolved = errors.New("resources_since names no declaration of the node that carried its resources")

// ByReference reports whether c is stored by reference: it names the
// declaration whose resources are its own (ResourcesSince) and carries
// none.
func (c DeclarationComposed) ByReference() bool {
	return c.ResourcesSince != "" && c.Resources == nil
}

// ResourcesOf reads through r the resources of the declaration.composed
// stored on stream under id (a resources_since): that event's own list.
// The controller names a declaration that carried its resources in full,
// so one lookup resolves a reference at any distance. What it cannot
// resolve wraps ErrResourcesUnresolved (and ErrNotFound when the id is
// stored under no event); a failed read is returned wrapped, never taken
// for a missing declaration.
func ResourcesOf(ctx context.Context, r IDReader, reg *Registry, stream, id string) ([]ResourceRef, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, fmt.Errorf("events: resources_since %q: not an event id: %w", id, ErrResourcesUnresolved)
	}
	ev, err := r.ReadByID(ctx, u)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("events: resources_since %s: %w: %w", id, ErrResourcesUnresolved, err)
	case err != nil:
		return nil, fmt.Errorf("events: resources_since %s: %w", id, err)
	case ev.Type != TypeDeclarationComposed || ev.Stream != stream:
		return nil, fmt.Errorf("events: resources_since %s is %s on %s, not a composed declaration on %s: %w", id, ev.Type, ev.Stream, stream, ErrResourcesUnresolved)
	}
	c, err := DecodeAs[DeclarationComposed](reg, ev)
	if err != nil {
		return nil, fmt.Errorf("events: resources_since %s: %w: %w", id, ErrResourcesUnresolved, err)
	}
	if c.Resources == nil {
		return nil, fmt.Errorf("events: resources_since %s carries no resources of its own: %w", id, ErrResourcesUnresolved)
	}
	return c.Resources, nil
}

// ResourceBook resolves the resources_since of composed declarations
// read in position order: it keeps, per node stream, the last declaration
// it saw carrying its resources (Resolve, called on every composed
// declaration in order), and looks any other up through its reader
// (ResourcesOf; nil: one it has not seen is unresolved). It holds one
// list per node, shared with the payloads it saw. Not safe for concurrent
// use.
type ResourceBook struct {
	reg  *Registry
	r    IDReader
	last map[string]seenResources // by stream
}

type seenResources struct {
	id   uuid.UUID
	refs []ResourceRef
}

// NewResourceBook returns a book decoding with reg and looking up through
// r (which may be nil).
func NewResourceBook(reg *Registry, r IDReader) *ResourceBook {
	return &ResourceBook{reg: reg, r: r, last: map[string]seenResources{}}
}

// Resolve returns c, the payload of ev, with its resources in full. A
// declaration that carries them is returned as it is (and kept for the
// ones after it); one by reference gets the list its resources_since
// names. A reference that does not resolve is no error: c is returned with
// its resources unknown (nil) and ResourcesUnknown saying why. Only a
// failed read of the store is an error.
func (b *ResourceBook) Resolve(ctx context.Context, ev Event, c DeclarationComposed) (DeclarationComposed, error) {
	if !c.ByReference() {
		if c.Resources != nil {
			b.last[ev.Stream] = seenResources{id: ev.ID, refs: c.Resources}
		}
		return c, nil
	}
	refs, err := b.lookup(ctx, ev.Stream, c.ResourcesSince)
	switch {
	case errors.Is(err, ErrResourcesUnresolved):
		c.ResourcesUnknown = err.Error()
		return c, nil
	case err != nil:
		return c, fmt.Errorf("events: declaration %s: %w", c.Declaration, err)
	}
	c.Resources = refs
	return c, nil
}

func (b *ResourceBook) lookup(ctx context.Context, stream, id string) ([]ResourceRef, error) {
	if s, ok := b.last[stream]; ok {
		if u, err := uuid.Parse(id); err == nil && s.id == u {
			return s.refs, nil
		}
	}
	if b.r == nil {
		return nil, fmt.Errorf("events: resources_since %s: not seen, and no store to look it up in: %w", id, ErrResourcesUnresolved)
	}
	refs, err := ResourcesOf(ctx, b.r, b.reg, stream, id)
	if err == nil {
		if _, seen := b.last[stream]; !seen {
			// The next declarations of the node name the same one until
			// its resources change: one lookup for all of them (a book
			// that starts after it, from a checkpoint).
			if u, perr := uuid.Parse(id); perr == nil {
				b.last[stream] = seenResources{id: u, refs: refs}
			}
		}
	}
	return refs, err
}

// Forget drops what the book keeps of stream (a node removed).
func (b *ResourceBook) Forget(stream string) { delete(b.last, stream) }

// PublicResourcesData is the data of a declaration.composed stored by
// reference, in the public form: resources, the list resources_since
// names, added before the closing brace, so StoredResourcesData gives the
// stored bytes back. When refs is nil (the reference did not resolve),
// resources_unknown, the note why, is added in its place.
func PublicResourcesData(data json.RawMessage, refs []ResourceRef, unknown string) (json.RawMessage, error) {
	key, val := "resources", []byte(nil)
	var err error
	if refs == nil {
		key = "resources_unknown"
		val, err = json.Marshal(unknown)
	} else {
		val, err = json.Marshal(refs)
	}
	if err != nil {
		return nil, err
	}
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '{' || d[len(d)-1] != '}' {
		return nil, fmt.Errorf("events: composed declaration data is not a JSON object: %w", ErrInvalid)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(d, &keys); err != nil {
		return nil, fmt.Errorf("events: composed declaration data: %w", err)
	}
	if _, ok := keys[key]; ok {
		keys[key] = val
		return json.Marshal(keys)
	}
	out := make([]byte, 0, len(d)+len(val)+len(key)+4)
	out = append(out, d[:len(d)-1]...)
	if len(keys) > 0 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, `":`...)
	out = append(out, val...)
	return append(out, '}'), nil
}

// StoredResourcesData is PublicResourcesData undone: the data of a
// declaration.composed giving resources_since beside resources (the
// public form, its roster already left out: StoredComposedData), with
// resources (and a reader's resources_unknown) left out, as the store
// keeps it. Data in the exact shape PublicResourcesData writes gets its
// stored bytes back; other data has the keys dropped and its keys written
// again in order.
func StoredResourcesData(data json.RawMessage, refs []ResourceRef) (json.RawMessage, error) {
	d := bytes.TrimSpace(data)
	if refs != nil {
		list, err := json.Marshal(refs)
		if err != nil {
			return nil, err
		}
		suffix := append(append([]byte(`,"resources":`), list...), '}')
		if bytes.HasSuffix(d, suffix) {
			return append(bytes.Clone(d[:len(d)-len(suffix)]), '}'), nil
		}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(d, &keys); err != nil {
		return nil, fmt.Errorf("events: composed declaration data: %w", err)
	}
	delete(keys, "resources")
	delete(keys, "resources_unknown")
	return json.Marshal(keys)
}
