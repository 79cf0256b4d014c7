package main

// A read answered in part: what the projections could not fold is said,
// and the exit code is 1.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"meshplane/api"
)

// skippedError is a read answered in part: the projections skipped events
// that did not decode (exit 1). note is what to print, if the command has
// not printed it already.
type skippedError struct {
	total int
	note  string
}

func (e *skippedError) Error() string {
	if e.note != "" {
		return e.note
	}
	return fmt.Sprintf("%d event(s) could not be folded: the answer above leaves them out", e.total)
}

// partial returns a *skippedError when sk holds events that did not decode,
// with the note unless printed says it is on stdout already.
func partial(sk api.Skipped, printed bool) error {
	if sk.FailuresTotal == 0 {
		return nil
	}
	se := &skippedError{total: sk.FailuresTotal}
	if !printed {
		var b strings.Builder
		noteSkipped(&b, sk)
		se.note = strings.TrimSpace(b.String())
	}
	return se
}

// noteSkipped tells what the projections could not fold: events of types
// this build does not know, and events that did not decode. They are kept
// in the store and counted here, never silently lost.
func noteSkipped(w io.Writer, sk api.Skipped) {
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
		fmt.Fprintf(w, "\nskipped events of types this build does not know (kept in the store): %s\n", strings.Join(parts, ", "))
	}
	if sk.FailuresTotal > 0 && len(sk.Failures) > 0 {
		f := sk.Failures[0]
		fmt.Fprintf(w, "\n%d event(s) could not be folded; the first at position %d (%s): %s\n", sk.FailuresTotal, f.Position, f.Type, f.Err)
	} else if sk.FailuresTotal > 0 {
		fmt.Fprintf(w, "\n%d event(s) could not be folded\n", sk.FailuresTotal)
	}
}
