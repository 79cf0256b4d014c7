package render

// A read answered in part: what the projections could not fold is said,
// and the printer's error says so too (the CLI exits 1).

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"meshplane/api"
)

// ErrPartial is what a printer's error is (errors.Is) when the answer it
// printed leaves out events the projections could not fold.
var ErrPartial = errors.New("the answer leaves out events that could not be folded")

// partialError is a read answered in part. note is what to print, if the
// printer has not printed it already.
type partialError struct {
	total int
	note  string
}

func (e *partialError) Error() string {
	if e.note != "" {
		return e.note
	}
	return fmt.Sprintf("%d event(s) could not be folded: the answer above leaves them out", e.total)
}

func (e *partialError) Is(target error) bool { return target == ErrPartial }

// Partial returns an ErrPartial when sk holds events that did not decode
// (nil when it holds none), its text the note unless printed says the
// note is on w already.
func Partial(sk api.Skipped, printed bool) error {
	if sk.FailuresTotal == 0 {
		return nil
	}
	pe := &partialError{total: sk.FailuresTotal}
	if !printed {
		var b strings.Builder
		Skipped(&b, sk)
		pe.note = strings.TrimSpace(b.String())
	}
	return pe
}

// noted prints the note of sk after a table and returns Partial's error.
func Noted(w io.Writer, sk api.Skipped) error {
	Skipped(w, sk)
	return Partial(sk, true)
}

// Skipped tells what the projections could not fold: events of types this
// build does not know, and events that did not decode. They are kept in
// the store and counted here, never silently lost. It prints nothing when
// sk is empty.
func Skipped(w io.Writer, sk api.Skipped) {
	if u := sk.UnknownTypes; len(u) > 0 {
		types := make([]string, 0, len(u))
		for t := range u {
			types = append(types, t)
		}
		sort.Strings(types)
		parts := make([]string, len(types))
		for i, t := range types {
			parts[i] = fmt.Sprintf("%s: %d", t, u[t])
		}
		pf(w, "\nskipped events of types this build does not know (kept in the store): %s\n", strings.Join(parts, ", "))
	}
	if sk.FailuresTotal > 0 && len(sk.Failures) > 0 {
		f := sk.Failures[0]
		pf(w, "\n%d event(s) could not be folded; the first at position %d (%s): %s\n", sk.FailuresTotal, f.Position, f.Type, f.Err)
	} else if sk.FailuresTotal > 0 {
		pf(w, "\n%d event(s) could not be folded\n", sk.FailuresTotal)
	}
}
