package render

import (
	"io"
)

// ImportBad lists an import's refused lines (at most the lines given,
// importfile.Checked.Listed), each marked when they were skipped.
func ImportBad(w io.Writer, path string, listed []string, skipped bool) {
	mark := ""
	if skipped {
		mark = " (skipped)"
	}
	for _, l := range listed {
		pf(w, "mesh import: %s: %s%s\n", path, l, mark)
	}
}

// Imported says what an import appended: read events, appended of them,
// and the invalid lines it skipped.
func Imported(w io.Writer, path string, read, appended, skipped int) {
	pf(w, "imported %d event(s) from %s: %d appended, %d already in the store", read, path, appended, read-appended)
	if skipped > 0 {
		pf(w, "; %d invalid line(s) skipped", skipped)
	}
	pln(w)
}
