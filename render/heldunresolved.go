package render

import (
	"io"
	"strconv"

	"meshplane/events/export"
)

// maxUnresolvedNamed is how many unresolved reports HeldUnresolved names
// before it counts the rest.
const maxUnresolvedNamed = 20

// HeldUnresolved is mesh export's note of the apply reports it wrote with
// their held_since unresolved (export.Unresolved): how many, and each by
// position, stream and held_since (the first maxUnresolvedNamed). It
// prints nothing when there are none. The held_since is quoted: it came
// from a node.
func HeldUnresolved(w io.Writer, us []export.Unresolved) {
	if len(us) == 0 {
		return
	}
	pf(w, "note: %d apply report(s) name in held_since no held list; written as stored (held_since alone, holds unknown):\n", len(us))
	for i, u := range us {
		if i == maxUnresolvedNamed {
			pf(w, "  and %d more (mesh store verify names every one)\n", len(us)-i)
			break
		}
		pf(w, "  position %d, %s: held_since %s\n", u.Position, u.Stream, strconv.Quote(u.HeldSince))
	}
}
