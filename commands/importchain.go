package commands

import (
	"bytes"
	"errors"
	"fmt"

	"meshplane/events"
)

// The chain values of an import file. mesh export gives each event its
// source store's chain value ("chain", events/chain.go): the SHA-256 of
// the value before it and the event's record as the source stored it. An
// import does not keep them (the target store chains what it appends
// after its own history), but it checks that they follow each other
// within the file, so that an export edited by hand (a line changed,
// removed, added or moved) is refused, naming the first line whose chain
// value does not follow from the line before it:
//
//   - a line's value is checked against the value of the line before it
//     and the line's record: its envelope, version and position as given,
//     its payload in the stored form (a public apply report's held list
//     and a public declaration's roster left out, as the source stored
//     them); after a refused line, against the last accepted line's value
//     too, so that a line added is refused alone, and a line edited with
//     the line after it at most;
//   - the first line with a value is checked when it starts the chain
//     (position 1, or the line before it carries none and is the position
//     before); otherwise (an export --since) its value is taken as given;
//   - a line without a value after one with a value is refused: a store's
//     chain never stops once started. A file written by hand carries none
//     and is not checked; removing every "chain" of an edited export makes
//     it one.
//
// An export gives each payload in JSON's compact form (encoding/json's,
// with <, > and & escaped), and the chain covers the bytes as stored: a
// store holding a payload in another form exports a line whose value does
// not follow, and is refused here. Every writer of this build stores the
// compact form, an import too (normalize: a line written by hand with
// spaces is stored without them); for a store an older build imported
// such a line into, remove the chain values from its export to import it.
//
// Whoever edits an export and recomputes every value after the edit makes
// a file consistent with itself: only the source's head, kept elsewhere
// (mesh store head, mesh store verify --anchor), tells it from the
// original.

// chainCheck is what Import keeps of the lines' chain values.
type chainCheck struct {
	line  int         // the last line read (0: none, or one that did not decode)
	has   bool        // it carried a chain value
	value events.Hash // that value
	pos   uint64      // its position
	first int         // the first line that carried a value (0: none)
	ok    bool        // the line was accepted
	// The value of the last line accepted, when a refused line followed
	// it: a line refused (one added, or edited) leaves the chain where it
	// was, so the line after it is checked against this value too.
	okHas   bool
	okValue events.Hash
}

// ErrChainEdited means a line's chain value does not follow from the line
// before it: the export was edited.
var ErrChainEdited = errors.New("chain value does not follow from the line before it")

// chainDone records whether the line chainLine saw last was accepted.
func (im *Import) chainDone(n int, ok bool) {
	c := &im.chain
	if c.line != n {
		*c = chainCheck{first: c.first} // not decoded: the next line's value is not checked
		return
	}
	c.ok = ok
	if ok && c.has {
		c.okHas, c.okValue = true, c.value
	}
}

// chainLine checks the chain value of line n, ev as decoded (version,
// position and chain as given), against the line before it: its value,
// or, when that line was refused, the last accepted line's value.
func (im *Import) chainLine(ev events.Event, n int) error {
	c := &im.chain
	prev := *c
	*c = chainCheck{line: n, has: !ev.Chain.IsZero(), value: ev.Chain, pos: ev.Position, first: prev.first}
	known := prev.line > 0 && prev.line == im.lastSeen
	if known {
		c.okHas, c.okValue = prev.okHas, prev.okValue // chainDone set them to prev's own when it was accepted
	}
	if !c.has {
		if known && prev.has {
			return fmt.Errorf("no chain value after line %d, which has one: %w (a store's chain never stops; an export edited by hand has every \"chain\" removed, or none)", prev.line, ErrChainEdited)
		}
		return nil
	}
	if c.first == 0 {
		c.first = n
	}
	var from []events.Hash
	switch {
	case known && prev.has:
		from = append(from, prev.value)
		if !prev.ok && prev.okHas {
			from = append(from, prev.okValue)
		}
	case ev.Position == 1, prev.first == 0 && known && prev.pos+1 == ev.Position:
		from = append(from, events.Hash{}) // the chain starts here
	default:
		return nil // the line before is not known (an export --since, a line that did not decode)
	}
	for _, f := range from {
		for _, e := range im.storedForms(ev) {
			if events.ChainOf(f, e) == ev.Chain {
				return nil
			}
		}
	}
	if from[0].IsZero() {
		return fmt.Errorf("chain %s: %w: it starts the chain, and is not the hash of its record", ev.Chain, ErrChainEdited)
	}
	return fmt.Errorf("chain %s: %w (line %d): this line, or the one before it, is not as exported", ev.Chain, ErrChainEdited, prev.line)
}

// storedForms are the forms in which ev's source may have stored it: as
// the line gives it, and with a public payload's held list or roster left
// out.
func (im *Import) storedForms(ev events.Event) []events.Event {
	out := []events.Event{ev}
	switch ev.Type {
	case events.TypeApplyReported:
		if st, held, _, err := storedForm(im.reg, ev); err == nil && held != nil {
			out = append(out, st)
		}
	case events.TypeDeclarationComposed:
		if st, err := storedComposed(im.reg, ev); err == nil {
			out = append(out, st)
		}
		// A declaration stored by reference to its resources
		// (resources_since), with or without its roster: the public form
		// gives them in full (importresources.go).
		if bytes.Contains(ev.Data, []byte(`"resources_since"`)) {
			for _, e := range out[:len(out):len(out)] {
				if st, err := storedResources(im.reg, e); err == nil {
					out = append(out, st)
				}
			}
		}
	}
	return out
}
