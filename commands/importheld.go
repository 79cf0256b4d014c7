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

// The public form of an apply report in an import file (mesh export
// writes it; events.PublicApplyData): a quiet report's held_since given
// beside the held list it names, in full. Import stores such a report as
// the store keeps it, held_since alone (events.StoredApplyData: the bytes
// the export's source stored), once it has checked that the list the line
// gives is the one held_since names: that of an apply report of the same
// node earlier in the file, or, for one that is not (an export --since),
// in the store (SettleHeld). A line whose list differs, or whose
// held_since names no such report, is refused.

// publicForms is what Import keeps to check public apply reports.
type publicForms struct {
	sums    map[string]heldSum // apply id -> the held list its report carried in full, or named
	applies map[string]string  // apply id -> the stream of its report, every report of the file
	pending []heldNeed         // lines whose named report is not in the file
}

type heldSum struct {
	stream string
	sum    [32]byte
}

// heldNeed is a line whose held_since is to be looked up in the store: a
// public line's, whose held list must be the one it names, or a compact
// line's (any), which must name a list that holds something.
type heldNeed struct {
	line          int
	stream, apply string
	sum           [32]byte
	any           bool
}

func sumHeld(held []events.Held) [32]byte {
	b, _ := json.Marshal(held)
	return sha256.Sum256(b)
}

// storedForm is ev as the store keeps it: an apply report in the public
// form with its held list left out. It also returns the list and the
// held_since the line gave (both empty for any other line).
func storedForm(reg *events.Registry, ev events.Event) (events.Event, []events.Held, string, error) {
	if ev.Type != events.TypeApplyReported || !bytes.Contains(ev.Data, []byte(`"held_since"`)) {
		return ev, nil, "", nil
	}
	a, err := events.DecodeAs[events.ApplyReported](reg, ev)
	if err != nil || a.HeldSince == "" || len(a.Held) == 0 {
		return ev, nil, "", nil // checked (and refused) as it is
	}
	if ev.Data, err = events.StoredApplyData(ev.Data, a.Held); err != nil {
		return ev, nil, "", err
	}
	return ev, a.Held, a.HeldSince, nil
}

// public checks line n, ev, for the public form and returns it as the
// store keeps it; it records a held list carried in full for the lines
// after it.
func (im *Import) public(ev events.Event, n int) (events.Event, error) {
	switch ev.Type {
	case events.TypeApplyReported:
	case events.TypeDeclarationComposed:
		ev, err := im.composedLine(ev, n)
		if err != nil {
			return ev, err
		}
		return im.resourcesLine(ev, n)
	default:
		return ev, nil
	}
	if im.pub.sums == nil {
		im.pub.sums, im.pub.applies = map[string]heldSum{}, map[string]string{}
	}
	ev, held, since, err := storedForm(im.reg, ev)
	if err != nil {
		return ev, err
	}
	if since == "" {
		a, err := events.DecodeAs[events.ApplyReported](im.reg, ev)
		if err != nil {
			return ev, nil // checked (and refused) as it is
		}
		id := cmp.Or(a.ApplyID, ev.ID.String())
		switch {
		case a.HeldSince != "":
			// Compact: held_since alone names an earlier report of the node
			// that held something.
			named, ok := im.pub.sums[a.HeldSince]
			switch {
			case ok && named.stream != ev.Stream:
				return ev, fmt.Errorf("apply.reported: held_since %s names a report on %s, not on %s", quote(a.HeldSince), short(named.stream), short(ev.Stream))
			case ok:
				im.pub.sums[id] = named // what a later line naming this one holds
			case im.pub.applies[a.HeldSince] != "":
				return ev, fmt.Errorf("apply.reported: held_since %s names a report that held nothing (on %s)", quote(a.HeldSince), short(im.pub.applies[a.HeldSince]))
			default:
				im.pub.pending = append(im.pub.pending, heldNeed{line: n, stream: ev.Stream, apply: a.HeldSince, any: true})
			}
		case len(a.Held) > 0:
			im.pub.sums[id] = heldSum{stream: ev.Stream, sum: sumHeld(a.Held)}
		}
		im.pub.applies[id] = ev.Stream
		return ev, nil
	}
	im.pub.applies[ev.ID.String()] = ev.Stream
	sum := sumHeld(held)
	named, ok := im.pub.sums[since]
	switch {
	case !ok && im.pub.applies[since] != "":
		return ev, fmt.Errorf("apply.reported: held_since %s names a report that held nothing (on %s)", quote(since), short(im.pub.applies[since]))
	case !ok:
		im.pub.pending = append(im.pub.pending, heldNeed{line: n, stream: ev.Stream, apply: since, sum: sum})
	case named.stream != ev.Stream:
		return ev, fmt.Errorf("apply.reported: held_since %s names a report on %s, not on %s", since, short(named.stream), short(ev.Stream))
	case named.sum != sum:
		return ev, fmt.Errorf("apply.reported: held (%d) is not the held list of apply %s, which held_since names", len(held), since)
	default:
		im.pub.sums[ev.ID.String()] = named // what a later line naming this one holds
	}
	return ev, nil
}

// HeldPending is how many lines give a held list beside a held_since that
// names a report not in the file: SettleHeld checks them in the store.
func (im *Import) HeldPending() int { return len(im.pub.pending) }

// SettleHeld checks the lines HeldPending counts: lookup (events.HeldOf
// through the store, or nil for a store that does not exist yet, which
// holds no report) gives the held list each held_since names. It returns
// the lines refused, in line order: held_since names no report of the
// node (an error wrapping events.ErrHeldUnresolved), or one with another
// list. Another error of lookup is returned: a failed read refuses
// nothing.
func (im *Import) SettleHeld(lookup func(stream, apply string) ([]events.Held, error)) ([]*ImportLineError, error) {
	var refused []*ImportLineError
	for _, p := range im.pub.pending {
		if im.refused(p.line) {
			continue // refused as Line checked it: one reason a line
		}
		var held []events.Held
		err := fmt.Errorf("not in the store: %w", events.ErrHeldUnresolved)
		if lookup != nil {
			held, err = lookup(p.stream, p.apply)
		}
		switch {
		case errors.Is(err, events.ErrHeldUnresolved):
			refused = append(refused, &ImportLineError{Line: p.line, Err: fmt.Errorf(
				"apply.reported: held_since %s names no apply report of this node, earlier in the file or in the store", p.apply)})
		case err != nil:
			return nil, fmt.Errorf("commands: import: line %d: %w", p.line, err)
		case p.any && len(held) == 0:
			refused = append(refused, &ImportLineError{Line: p.line, Err: fmt.Errorf(
				"apply.reported: held_since %s names a report that held nothing", quote(p.apply))})
		case p.any:
		case sumHeld(held) != p.sum:
			refused = append(refused, &ImportLineError{Line: p.line, Err: fmt.Errorf(
				"apply.reported: held is not the held list of apply %s (%d in the store), which held_since names", p.apply, len(held))})
		}
	}
	im.pub.pending = nil
	for _, r := range refused {
		if i, ok := slices.BinarySearchFunc(im.seen, r.Line, func(l seenLine, n int) int { return cmp.Compare(l.n, n) }); ok {
			im.seen[i].ok = false
		}
	}
	return refused, nil
}

// HeldLookup is the lookup SettleHeld takes, through store's id index
// when it reads by id (nil when it does not: every pending line is then
// refused, as one naming a report not to be found).
func HeldLookup(ctx context.Context, store events.Store, reg *events.Registry) func(stream, apply string) ([]events.Held, error) {
	r, ok := store.(events.IDReader)
	if !ok {
		return nil
	}
	return func(stream, apply string) ([]events.Held, error) { return events.HeldOf(ctx, r, reg, stream, apply) }
}

// refused says whether line n was refused as Line checked it: a line
// queued for a settle (its held_since, its resources_since) and refused
// for another reason is not refused twice.
func (im *Import) refused(n int) bool {
	i, ok := slices.BinarySearchFunc(im.seen, n, func(l seenLine, n int) int { return cmp.Compare(l.n, n) })
	return ok && !im.seen[i].ok
}
