package render

import (
	"io"

	"meshplane/events"
)

// ChainHead prints the head line of mesh store head: the one line an
// operator keeps off the host (events.ChainHead.String; ParseChainHead
// reads it back, and mesh store verify --anchor takes it).
func ChainHead(w io.Writer, h events.ChainHead) {
	pln(w, h.String())
}

// ChainReport prints what mesh store verify --anchor found: where the
// chain starts, how far it was checked, the anchor, and the first position
// that is not intact, if any.
func ChainReport(w io.Writer, r events.ChainReport) {
	switch {
	case r.Start == 0:
		pf(w, "chain: no record carries a chain value (%d read)\n", r.Checked)
	case r.Start == 1:
		pf(w, "chain: starts at position 1\n")
	default:
		pf(w, "chain: starts at position %d (positions 1 to %d predate it: they are not chained)\n", r.Start, r.Start-1)
	}
	if r.Break != nil {
		pf(w, "checked: positions 1 to %d intact\n", r.Break.Position-1)
		if r.Anchor != nil {
			pf(w, "anchor: %s\n", r.Anchor)
		}
		pf(w, "NOT INTACT at position %d: %s\n", r.Break.Position, r.Break.Reason)
		return
	}
	pf(w, "checked: positions 1 to %d, each record matching its chain value\n", r.Checked)
	if r.Anchor != nil {
		pf(w, "anchor: %s\n", r.Anchor)
		pf(w, "intact up to the anchor (position %d)", r.Anchor.Position)
		if r.Checked > r.Anchor.Position {
			pf(w, ", and %d event(s) after it", r.Checked-r.Anchor.Position)
		}
		pln(w)
	}
	pf(w, "head: %s\n", r.Head)
}
