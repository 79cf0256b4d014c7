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

// The roster in an import file. roster.changed lines (on
// events.RosterStream) are folded in the file's order, each the next
// revision of the one before (the first may start anywhere: an export
// --since), so that the roster a composed declaration names is known. A
// declaration.composed in the public form (mesh export writes it:
// events.PublicComposedData) gives roster_revision and, beside it, that
// revision's names in full: when the file holds that revision, the names
// must be its names, and the line is stored as the store keeps it, the
// revision alone (events.StoredComposedData). A line naming a revision the
// file does not hold is stored as it is, names and revision both: its
// readers then take the names it carries.

// importRoster is what Import keeps of the file's roster.
type importRoster struct {
	started bool
	cur     events.Roster
	sums    map[uint64][32]byte // revision -> the sum of its names
	pending []rosterNeed        // public lines naming a revision not folded
	// deferred: the file's first revision is not 1; changes are its
	// roster lines, folded by SettleRoster onto the store's revision.
	deferred bool
	changes  []events.RosterChanged
}

// rosterNeed is a public composed line whose roster revision is to be
// looked up in the store.
type rosterNeed struct {
	line int
	rev  uint64
	sum  [32]byte
}

// RosterPending is how many public composed lines name a roster revision
// the file does not hold: SettleRoster looks them up in the store.
func (im *Import) RosterPending() int { return len(im.roster.pending) }

// SettleRoster looks up through lookup (the names of a roster revision in
// the store; nil for a store that does not exist yet) each line
// RosterPending counts. A revision the store holds with the line's names
// stores the line without them; with other names, the line is refused
// (returned, in line order); one the store does not hold (wrapping
// events.ErrRosterUnresolved) keeps the line as it is, names and all.
// Another error of lookup is returned: a failed read refuses nothing.
func (im *Import) SettleRoster(lookup func(rev uint64) (events.Roster, error)) ([]*ImportLineError, error) {
	var refused []*ImportLineError
	r := &im.roster
	if r.deferred && lookup != nil {
		base, err := lookup(r.changes[0].Revision - 1)
		switch {
		case errors.Is(err, events.ErrRosterUnresolved):
		case err != nil:
			return nil, fmt.Errorf("commands: import: the roster before revision %d: %w", r.changes[0].Revision, err)
		default:
			for _, c := range r.changes {
				if base, err = base.Apply(c); err != nil {
					break
				}
				r.sum(base)
			}
		}
	}
	for _, p := range r.pending {
		var names []string
		if sum, ok := r.sums[p.rev]; ok {
			names = nil
			if sum == p.sum {
				names = []string{} // matched: marked below
			}
		}
		if lookup == nil {
			continue
		}
		if _, inFile := r.sums[p.rev]; !inFile {
			at, err := lookup(p.rev)
			switch {
			case errors.Is(err, events.ErrRosterUnresolved):
				continue
			case err != nil:
				return nil, fmt.Errorf("commands: import: line %d: %w", p.line, err)
			}
			if sumNames(at.Names()) == p.sum {
				names = []string{}
			}
		}
		i, ok := slices.BinarySearchFunc(im.seen, p.line, func(l seenLine, n int) int { return cmp.Compare(l.n, n) })
		if !ok {
			continue
		}
		if names == nil {
			refused = append(refused, &ImportLineError{Line: p.line, Err: fmt.Errorf(
				"declaration.composed: roster is not that of roster revision %d, which roster_revision names", p.rev)})
			im.seen[i].ok = false
			continue
		}
		im.seen[i].stripped = true
	}
	r.pending = nil
	return refused, nil
}

// RosterLookup is the lookup SettleRoster takes: a revision read from
// store's roster stream.
func RosterLookup(ctx context.Context, store events.StreamReader, reg *events.Registry) func(rev uint64) (events.Roster, error) {
	book := events.NewRosterBook(reg, store)
	return func(rev uint64) (events.Roster, error) { return book.Roster(ctx, rev) }
}

func sumNames(names []string) [32]byte {
	if names == nil {
		names = []string{}
	}
	b, _ := json.Marshal(names)
	return sha256.Sum256(b)
}

// rosterLine checks a roster.changed line and folds it. A file whose
// first roster revision is not 1 (an export --since) folds its changes
// once SettleRoster has read the revision before it from the store.
func (im *Import) rosterLine(ev events.Event) error {
	if ev.Stream != events.RosterStream {
		return fmt.Errorf("%s on stream %s: the roster's events are on %s", ev.Type, short(ev.Stream), events.RosterStream)
	}
	c, err := events.DecodeAs[events.RosterChanged](im.reg, ev)
	if err != nil {
		return err
	}
	r := &im.roster
	if !r.started && c.Revision > 1 {
		r.deferred = true
	}
	r.started = true
	if r.deferred {
		if n := len(r.changes); n > 0 && c.Revision != r.changes[n-1].Revision+1 {
			return fmt.Errorf("%s: revision %d after %d: %w", ev.Type, c.Revision, r.changes[n-1].Revision, events.ErrRosterUnresolved)
		}
		r.changes = append(r.changes, c)
		return nil
	}
	next, err := r.cur.Apply(c)
	if err != nil {
		return fmt.Errorf("%s: %w", ev.Type, err)
	}
	r.cur = next
	r.sum(next)
	return nil
}

func (r *importRoster) sum(at events.Roster) {
	if r.sums == nil {
		r.sums = map[uint64][32]byte{}
	}
	r.sums[at.Revision] = sumNames(at.Names())
}

// composedLine returns a declaration.composed line as the store keeps it:
// in the public form and naming a revision the file holds, with its
// roster left out once checked.
func (im *Import) composedLine(ev events.Event, n int) (events.Event, error) {
	if !bytes.Contains(ev.Data, []byte(`"roster_revision"`)) {
		return ev, nil
	}
	c, err := events.DecodeAs[events.DeclarationComposed](im.reg, ev)
	if err != nil || c.RosterRevision == 0 || c.Roster == nil {
		return ev, nil // checked (and refused) as it is, or stored
	}
	sum, ok := im.roster.sums[c.RosterRevision]
	if !ok {
		// Not in the file: SettleRoster looks it up in the store.
		im.roster.pending = append(im.roster.pending, rosterNeed{line: n, rev: c.RosterRevision, sum: sumNames(c.Roster)})
		return ev, nil
	}
	if sumNames(c.Roster) != sum {
		return ev, fmt.Errorf("declaration.composed: roster (%d names) is not that of roster revision %d, which roster_revision names", len(c.Roster), c.RosterRevision)
	}
	if ev, err = storedComposed(im.reg, ev); err != nil {
		return ev, err
	}
	im.stripped = true
	return ev, nil
}

// storedComposed is ev, a declaration.composed in the public form, as the
// store keeps it: its roster left out.
func storedComposed(reg *events.Registry, ev events.Event) (events.Event, error) {
	c, err := events.DecodeAs[events.DeclarationComposed](reg, ev)
	if err != nil {
		return ev, err
	}
	ev.Data, err = events.StoredComposedData(ev.Data, c.Roster)
	return ev, err
}
