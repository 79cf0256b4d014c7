package render

import (
	"io"
	"strings"
	"time"

	"meshplane/api"
)

// Reverted shows a revert (mesh revert): the moment it went back to, the
// module as it stood then (its last event at or before it, its
// definition's digest, the builds it ran), and the events appended, or
// that it was already so.
func Reverted(w io.Writer, r api.RevertResult) {
	var b strings.Builder
	pf(&b, "as it stood after position %d (%s): definition %s, ", r.Position, r.At.Format(time.RFC3339), short(r.SpecDigest))
	if len(r.Builds) == 0 {
		b.WriteString("no build")
	}
	for i, bd := range r.Builds {
		if i > 0 {
			b.WriteString(", ")
		}
		pf(&b, "%s at %s", bd.Name, bd.Digest)
	}
	if len(r.Events) == 0 {
		pf(w, "module %s is already as it was at %s, %s; nothing to do\n", r.Module, r.To, b.String())
		return
	}
	pf(w, "module %s reverted to %s, %s\n", r.Module, r.To, b.String())
	for _, ev := range r.Events {
		pln(w, EventLine(ev))
	}
}
