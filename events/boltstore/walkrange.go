package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"meshplane/events"
)

// A bounded read (ReadAll with a limit: the timeline's page of 50, a
// binary search by time, a fold from a checkpoint) reaches only the pages
// that hold its positions, not every page after them: rangeWalk checks
// those, so that a read-only store's first read early in a long history
// costs what it reads, not a walk of the rest of the file.

// maxSpans bounds the ranges a lazyCheck remembers as walked; past it, a
// range not covered is walked again (correct, only slower).
const maxSpans = 64

// span is a range of positions [lo, hi] whose pages were walked.
type span struct{ lo, hi uint64 }

// eventsBetween makes sure the pages a ReadAll of positions lo to hi
// reaches are walked (a cursor reads one key past the last it returns: hi
// should be one past the read's last position). Damage is an error
// wrapping events.ErrDamaged.
func (l *lazyCheck) eventsBetween(lo, hi uint64) error {
	if l.whole.Load() || lo >= l.from.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.coveredLocked(lo, hi) {
		return nil
	}
	w, err := newPageWalk(l.f, l.size, l.pageSize, l.meta)
	if err == nil {
		err = w.rangeWalk(l.events, u64key(lo), u64key(hi), 0, evPath)
	}
	if err == nil && l.chain != 0 {
		err = w.rangeWalk(l.chain, u64key(lo), u64key(hi), 0, chainPath)
	}
	if errors.Is(err, os.ErrClosed) {
		return events.ErrClosed
	}
	if err != nil {
		return fmt.Errorf("%w: %w", events.ErrDamaged, err)
	}
	if len(l.spans) < maxSpans {
		l.spans = append(l.spans, span{lo, hi})
	}
	return nil
}

func (l *lazyCheck) coveredLocked(lo, hi uint64) bool {
	if l.whole.Load() || lo >= l.from.Load() {
		return true
	}
	for _, s := range l.spans {
		if s.lo <= lo && hi <= s.hi {
			return true
		}
	}
	return false
}

// rangeWalk checks the pages of the tree rooted at id that a cursor reaches
// by seeking lo and calling Next while keys are at most hi: on each branch
// page, the child bbolt's search for lo picks, the one after it, and every
// child after those whose first key is at most hi; the first and the last
// of them are walked the same way, the ones between whole. Keys of each branch page are
// checked in strictly increasing order, as seekWalk checks them, so the
// search is bbolt's. Any bucket found on the way is walked whole.
func (w *pageWalk) rangeWalk(id uint64, lo, hi []byte, depth int, path string) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: tree deeper than %d pages", path, maxTreeDepth)
	}
	nested, children, keyOf, err := w.keyed(id, depth, path)
	if err != nil {
		return err
	}
	if children == nil {
		return w.trees(nested)
	}
	count := len(children)
	first := search(count, keyOf, lo)
	// The child after first too, whatever its key: a seek past the last
	// key of first's subtree moves on to the next leaf (keys are dense
	// positions, so only in a damaged file; it is walked all the same).
	last := min(first+1, count-1)
	for last+1 < count && bytes.Compare(keyOf(last+1), hi) <= 0 {
		last++
	}
	if err := w.rangeWalk(children[first].id, lo, hi, depth+1, path); err != nil {
		return err
	}
	if last > first {
		if err := w.trees(children[first+1 : last]); err != nil {
			return err
		}
		return w.rangeWalk(children[last].id, lo, hi, depth+1, path)
	}
	return nil
}
