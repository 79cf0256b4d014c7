package commands

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"meshplane/events"
)

// The resources of a composed declaration in an import file. mesh export
// gives a declaration stored by reference (resources_since: the id of the
// node's declaration.composed that carried the same resources) in the
// public form, its resources in full beside the reference
// (events.PublicResourcesData). Import stores such a line by reference
// again, resources left out (events.StoredResourcesData: the bytes the
// export's source stored), once it has checked that the line it names is
// earlier in the file, on the same node's stream, carries its resources
// and they are the line's. A line naming one with other resources, or a
// line of another stream, is refused. A line naming one the file does
// not hold as a declaration carrying its resources (an export --since) is
// checked in the store (SettleResources): stored by reference when the
// store holds the one named with the same resources, refused when with
// others, and stored as it is, resources and reference both, when the
// store does not hold it (its readers then take the resources it
// carries). A line
// in the stored form (a reference alone, mesh export --compact) is stored
// as it is, less a reader's note (resources_unknown); readers resolve it,
// or read its resources as unknown.

// importResources is what Import keeps of the file's composed
// declarations.
type importResources struct {
	carried map[string]carriedLine // event id -> a composed line stored with its resources
	pending []resourcesNeed        // public lines naming a declaration not in the file
}

// resourcesNeed is a public composed line whose reference is to be looked
// up in the store.
type resourcesNeed struct {
	line          int
	stream, since string
	sum           [32]byte
}

type carriedLine struct {
	stream string
	sum    [32]byte
}

func sumResources(refs []events.ResourceRef) [32]byte {
	b, _ := json.Marshal(refs)
	return sha256.Sum256(b)
}

// resourcesLine checks line ev (a declaration.composed, its roster
// already left out when checked: composedLine) for a reference to its
// resources, and returns it as the store keeps it; it records a line
// stored with its resources for the lines after it. Lines of other types
// are not recorded: a reference names a composed declaration.
func (im *Import) resourcesLine(ev events.Event, n int) (events.Event, error) {
	r := &im.res
	if r.carried == nil {
		r.carried = map[string]carriedLine{}
	}
	id := ev.ID.String()
	if !bytes.Contains(ev.Data, []byte(`"resources_since"`)) {
		if c, err := events.DecodeAs[events.DeclarationComposed](im.reg, ev); err == nil && c.Resources != nil {
			r.carried[id] = carriedLine{stream: ev.Stream, sum: sumResources(c.Resources)}
		}
		return ev, nil
	}
	c, err := events.DecodeAs[events.DeclarationComposed](im.reg, ev)
	if err != nil || c.ResourcesSince == "" {
		return ev, nil // checked (and refused) as it is
	}
	named, inFile := r.carried[c.ResourcesSince]
	switch {
	case c.Resources == nil:
		// The stored form: kept, less a reader's note.
		if inFile && named.stream != ev.Stream {
			return ev, fmt.Errorf("declaration.composed: resources_since %s names a declaration on %s, not on %s", c.ResourcesSince, short(named.stream), short(ev.Stream))
		}
		return im.withoutNote(ev)
	case !inFile:
		// Not in the file: SettleResources looks it up in the store.
		r.pending = append(r.pending, resourcesNeed{line: n, stream: ev.Stream, since: c.ResourcesSince, sum: sumResources(c.Resources)})
		return ev, nil
	case named.stream != ev.Stream:
		return ev, fmt.Errorf("declaration.composed: resources_since %s names a declaration on %s, not on %s", c.ResourcesSince, short(named.stream), short(ev.Stream))
	case named.sum != sumResources(c.Resources):
		return ev, fmt.Errorf("declaration.composed: resources (%d) are not those of the declaration %s, which resources_since names", len(c.Resources), c.ResourcesSince)
	}
	if ev, err = storedResources(im.reg, ev); err != nil {
		return ev, err
	}
	im.resStripped = true
	return ev, nil
}

// storedResources is ev, a declaration.composed in the public form with
// its roster left out, as the store keeps it: its resources left out.
func storedResources(reg *events.Registry, ev events.Event) (events.Event, error) {
	c, err := events.DecodeAs[events.DeclarationComposed](reg, ev)
	if err != nil {
		return ev, err
	}
	ev.Data, err = events.StoredResourcesData(ev.Data, c.Resources)
	return ev, err
}

// withoutNote is ev, a declaration.composed, without a reader's note
// (resources_unknown) beside a reference alone: as resourcesLine checked
// it.
func (im *Import) withoutNote(ev events.Event) (events.Event, error) {
	if !bytes.Contains(ev.Data, []byte(`"resources_unknown"`)) {
		return ev, nil
	}
	c, err := events.DecodeAs[events.DeclarationComposed](im.reg, ev)
	if err != nil || !c.ByReference() || c.ResourcesUnknown == "" {
		return ev, nil
	}
	ev.Data, err = events.StoredResourcesData(ev.Data, nil)
	return ev, err
}

// ResourcesPending is how many public composed lines name a declaration
// the file does not hold: SettleResources looks them up in the store.
func (im *Import) ResourcesPending() int { return len(im.res.pending) }

// SettleResources looks up through lookup (the resources of the
// declaration stored on a stream under an id, events.ResourcesOf; nil for
// a store that does not exist yet) each line ResourcesPending counts. One
// the store holds with the line's resources stores the line by reference;
// with others, the line is refused (returned, in line order); one the
// store does not hold (wrapping events.ErrResourcesUnresolved) keeps the
// line as it is, resources and all. Another error of lookup is returned: a
// failed read refuses nothing.
func (im *Import) SettleResources(lookup func(stream, id string) ([]events.ResourceRef, error)) ([]*ImportLineError, error) {
	var refused []*ImportLineError
	for _, p := range im.res.pending {
		if im.refused(p.line) {
			continue // refused as Line checked it
		}
		if lookup == nil {
			break
		}
		refs, err := lookup(p.stream, p.since)
		switch {
		case errors.Is(err, events.ErrResourcesUnresolved):
			continue
		case err != nil:
			return nil, fmt.Errorf("commands: import: line %d: %w", p.line, err)
		}
		i, ok := slices.BinarySearchFunc(im.seen, p.line, func(l seenLine, n int) int { return cmp.Compare(l.n, n) })
		if !ok || !im.seen[i].ok {
			continue
		}
		if sumResources(refs) != p.sum {
			refused = append(refused, &ImportLineError{Line: p.line, Err: fmt.Errorf(
				"declaration.composed: resources are not those of the declaration %s (%d in the store), which resources_since names", p.since, len(refs))})
			im.seen[i].ok = false
			continue
		}
		im.seen[i].resStripped = true
	}
	im.res.pending = nil
	return refused, nil
}

// ResourcesLookup is the lookup SettleResources takes, through store's id
// index when it reads by id (nil when it does not: every pending line is
// then kept as it is).
func ResourcesLookup(ctx context.Context, store events.Store, reg *events.Registry) func(stream, id string) ([]events.ResourceRef, error) {
	r, ok := store.(events.IDReader)
	if !ok {
		return nil
	}
	return func(stream, id string) ([]events.ResourceRef, error) {
		return events.ResourcesOf(ctx, r, reg, stream, id)
	}
}
