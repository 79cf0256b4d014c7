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
	if AnchorDiffers(r) {
		// Every record matched its chain value up to the anchor's
		// position, where the value is not the anchor's: the chain was
		// recomputed by a rewrite somewhere at or before it, and a head
		// alone cannot say where. Nothing more is known.
		pf(w, "checked: positions 1 to %d, each record matching its chain value\n", r.Checked)
		pf(w, "anchor: %s\n", r.Anchor)
		pf(w, "NOT INTACT: the history does not end at the anchor's chain value: position %d's chain is %s, the anchor says %s\n",
			r.Anchor.Position, r.Head.Chain, r.Anchor.Chain)
		pf(w, "(a history rewritten at or before position %d, its chain recomputed: a head alone cannot say which position was changed first)\n", r.Anchor.Position)
		return
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

// AnchorDiffers reports whether r's break is the anchor's chain value alone:
// the history reached the anchor's position, every record matching its
// chain value, and the value there is not the anchor's (a rewrite that
// recomputed the chain, an edited export imported again, another store's
// anchor). Such a break has no first bad position to name.
func AnchorDiffers(r events.ChainReport) bool {
	return r.Break != nil && r.Anchor != nil && r.Break.Position == r.Anchor.Position &&
		r.Checked == r.Anchor.Position && r.Head.Position == r.Anchor.Position && r.Head.Chain != r.Anchor.Chain
}
