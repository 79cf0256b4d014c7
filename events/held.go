package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// ErrHeldUnresolved means a compact apply report's held_since names no
// apply report of its node that carried a held list: the id is stored
// under no event, under another node's, under an event of another type,
// or the chain of held_since does not end in a held list.
var ErrHeldUnresolved = errors.New("held_since names no report of the node that carried a held list")

// maxHeldHops bounds the held_since a lookup follows. An agent always
// names a report that carried the list itself (one hop); a report written
// by hand, or by an agent whose state was restored from an older copy, may
// name one that names another.
const maxHeldHops = 16

// HeldOf reads through r the held list of the apply report stored on
// stream under applyID (a held_since): the report's own list, or, when it
// too is compact, the list its held_since names, at most maxHeldHops away.
// What it cannot resolve wraps ErrHeldUnresolved (and ErrNotFound when an
// id is stored under no event); a failed read is returned wrapped, never
// taken for a missing report.
func HeldOf(ctx context.Context, r IDReader, reg *Registry, stream, applyID string) ([]Held, error) {
	want := applyID
	for range maxHeldHops {
		id, err := uuid.Parse(want)
		if err != nil {
			return nil, fmt.Errorf("events: held_since %q: not an apply id: %w", want, ErrHeldUnresolved)
		}
		ev, err := r.ReadByID(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("events: held_since %s: %w: %w", want, ErrHeldUnresolved, err)
		case err != nil:
			return nil, fmt.Errorf("events: held_since %s: %w", want, err)
		case ev.Type != TypeApplyReported || ev.Stream != stream:
			return nil, fmt.Errorf("events: held_since %s is %s on %s, not an apply report on %s: %w", want, ev.Type, ev.Stream, stream, ErrHeldUnresolved)
		}
		a, err := DecodeAs[ApplyReported](reg, ev)
		if err != nil {
			return nil, fmt.Errorf("events: held_since %s: %w", want, err)
		}
		if a.HeldSince == "" {
			if len(a.Held) == 0 {
				return nil, fmt.Errorf("events: held_since %s names a report that held nothing: %w", want, ErrHeldUnresolved)
			}
			return a.Held, nil
		}
		want = a.HeldSince
	}
	return nil, fmt.Errorf("events: held_since %s: more than %d reports each naming another: %w", applyID, maxHeldHops, ErrHeldUnresolved)
}

// PublicApplyData is the data of a compact apply.reported (one giving
// held_since) in the public form: held, the list held_since names, given in
// full beside held_since. It keeps the stored bytes and adds
// `,"held":[...]` before the closing brace, so StoredApplyData gives the
// stored bytes back exactly (an import then stores what the export's
// source stored). Data that already has a held key (an empty list beside
// held_since) is written again with that key replaced.
func PublicApplyData(data json.RawMessage, held []Held) (json.RawMessage, error) {
	list, err := json.Marshal(nonNil(held))
	if err != nil {
		return nil, err
	}
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '{' || d[len(d)-1] != '}' {
		return nil, fmt.Errorf("events: apply report data is not a JSON object: %w", ErrInvalid)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(d, &keys); err != nil {
		return nil, fmt.Errorf("events: apply report data: %w", err)
	}
	if _, ok := keys["held"]; ok {
		keys["held"] = list
		return json.Marshal(keys)
	}
	out := make([]byte, 0, len(d)+len(list)+9)
	out = append(out, d[:len(d)-1]...)
	if len(keys) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"held":`...)
	out = append(out, list...)
	return append(out, '}'), nil
}

// StoredApplyData is PublicApplyData undone: the data of an apply.reported
// giving held_since beside held (the public form), with held left out, as
// the store keeps it. held is the list the data gives. Data in the exact
// shape PublicApplyData writes gets its stored bytes back; other data (a
// public line written by hand) has its held key dropped and its keys
// written again in order.
func StoredApplyData(data json.RawMessage, held []Held) (json.RawMessage, error) {
	list, err := json.Marshal(nonNil(held))
	if err != nil {
		return nil, err
	}
	d := bytes.TrimSpace(data)
	suffix := append(append([]byte(`"held":`), list...), '}')
	if bytes.HasSuffix(d, suffix) {
		head := d[:len(d)-len(suffix)]
		switch {
		case bytes.HasSuffix(head, []byte(",")):
			return append(bytes.Clone(head[:len(head)-1]), '}'), nil
		case bytes.Equal(head, []byte("{")):
			return json.RawMessage("{}"), nil
		}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(d, &keys); err != nil {
		return nil, fmt.Errorf("events: apply report data: %w", err)
	}
	delete(keys, "held")
	return json.Marshal(keys)
}

func nonNil(held []Held) []Held {
	if held == nil {
		return []Held{}
	}
	return held
}

// Public hands events out in their public form (docs/design.md, "The event vocabulary"):
// every event as stored, but a compact apply.reported, whose held_since
// names an earlier report's held list, with that list in full beside it
// (PublicApplyData). It is what export and the API give. It keeps, per
// stream, the last held list it saw carried in full, and looks any other
// up through the store (HeldOf): a report resolves at any distance from
// the one it names, whatever the reader saw before. Not safe for
// concurrent use.
//
// A declaration.composed that names a roster revision (roster_revision)
// and carries no roster is given its roster in full (PublicComposedData),
// resolved through a RosterBook: from the roster.changed it has seen, else
// read from the roster's stream when r is also a StreamReader (or one is
// given: WithRosters).
//
// A declaration.composed stored by reference (resources_since) is given
// its resources in full (PublicResourcesData), resolved through a
// ResourceBook: the last one of its node it has seen carrying them, else
// looked up through r. One that does not resolve is given with
// resources_unknown, the note why, in place of its resources: an export
// of a damaged history is written whole.
type Public struct {
	reg    *Registry
	r      IDReader // nil: only what it has seen
	last   map[string]seenHeld
	roster *RosterBook
	res    *ResourceBook
}

type seenHeld struct {
	apply string
	held  []Held
}

// NewPublic returns a Public decoding with reg and looking held lists up
// through r (nil: a held_since it has not seen is ErrHeldUnresolved).
func NewPublic(reg *Registry, r IDReader) *Public {
	sr, _ := r.(StreamReader)
	return &Public{reg: reg, r: r, last: map[string]seenHeld{}, roster: NewRosterBook(reg, sr), res: NewResourceBook(reg, r)}
}

// WithRosters makes p read roster revisions it has not seen through s.
func (p *Public) WithRosters(s StreamReader) *Public {
	p.roster = NewRosterBook(p.reg, s)
	return p
}

// Event returns ev in its public form. Events other than compact apply
// reports are returned as they are; their data is shared with ev.
func (p *Public) Event(ctx context.Context, ev Event) (Event, error) {
	switch ev.Type {
	case TypeApplyReported:
	case TypeRosterChanged:
		if c, err := DecodeAs[RosterChanged](p.reg, ev); err == nil && ev.Stream == RosterStream {
			p.roster.Fold(c)
		}
		return ev, nil
	case TypeDeclarationComposed:
		return p.composed(ctx, ev)
	default:
		return ev, nil
	}
	since := bytes.Contains(ev.Data, []byte(`"held_since"`))
	if !since && !bytes.Contains(ev.Data, []byte(`"held":[{`)) {
		return ev, nil // holds nothing
	}
	a, err := DecodeAs[ApplyReported](p.reg, ev)
	if err != nil {
		return ev, nil // handed out as stored: a reader counts it as it would
	}
	if a.HeldSince == "" {
		if len(a.Held) > 0 {
			id := a.ApplyID
			if id == "" {
				id = ev.ID.String()
			}
			p.last[ev.Stream] = seenHeld{apply: id, held: a.Held}
		}
		return ev, nil
	}
	held, err := p.held(ctx, ev.Stream, a.HeldSince)
	if err != nil {
		return Event{}, fmt.Errorf("events: apply report at position %d: %w", ev.Position, err)
	}
	if ev.Data, err = PublicApplyData(ev.Data, held); err != nil {
		return Event{}, fmt.Errorf("events: apply report at position %d: %w", ev.Position, err)
	}
	return ev, nil
}

// composed is Event for a declaration.composed.
func (p *Public) composed(ctx context.Context, ev Event) (Event, error) {
	c, err := DecodeAs[DeclarationComposed](p.reg, ev)
	if err != nil {
		return ev, nil // handed out as stored
	}
	full, err := p.res.Resolve(ctx, ev, c)
	if err != nil {
		return Event{}, fmt.Errorf("events: composed declaration at position %d: %w", ev.Position, err)
	}
	if c.ByReference() {
		if ev.Data, err = PublicResourcesData(ev.Data, full.Resources, full.ResourcesUnknown); err != nil {
			return Event{}, fmt.Errorf("events: composed declaration at position %d: %w", ev.Position, err)
		}
	}
	if c.RosterRevision == 0 || c.Roster != nil {
		return ev, nil
	}
	names, err := p.roster.Names(ctx, c.RosterRevision)
	if err != nil {
		return Event{}, fmt.Errorf("events: composed declaration at position %d: %w", ev.Position, err)
	}
	if ev.Data, err = PublicComposedData(ev.Data, names); err != nil {
		return Event{}, fmt.Errorf("events: composed declaration at position %d: %w", ev.Position, err)
	}
	return ev, nil
}

func (p *Public) held(ctx context.Context, stream, apply string) ([]Held, error) {
	if s, ok := p.last[stream]; ok && s.apply == apply {
		return s.held, nil
	}
	if p.r == nil {
		return nil, fmt.Errorf("events: held_since %s: not seen, and no store to look it up in: %w", apply, ErrHeldUnresolved)
	}
	held, err := HeldOf(ctx, p.r, p.reg, stream, apply)
	if err != nil {
		return nil, err
	}
	p.last[stream] = seenHeld{apply: apply, held: held}
	return held, nil
}
