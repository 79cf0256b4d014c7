package projections_test

import (
	"math/rand/v2"

	"meshplane/projections"
)

// randomFilter is a random filter over the entries all: each of node,
// type, module and resource one of the entries' own or none, a direction,
// now and then a correlation (one filter in seven, by i), and a time from
// one of the entries or none. The tests that use it add their bounds.
func randomFilter(r *rand.Rand, all []projections.Entry, i int) projections.Filter {
	pick := func(vals func(projections.Entry) []string) string {
		if r.IntN(2) == 0 {
			return ""
		}
		for range 20 {
			if vs := vals(all[r.IntN(len(all))]); len(vs) > 0 {
				return vs[r.IntN(len(vs))]
			}
		}
		return ""
	}
	f := projections.Filter{
		Node:     pick(func(e projections.Entry) []string { return []string{e.Node} }),
		Type:     pick(func(e projections.Entry) []string { return []string{e.Type} }),
		Module:   pick(func(e projections.Entry) []string { return e.Modules }),
		Resource: pick(func(e projections.Entry) []string { return e.Resources }),
		Forward:  r.IntN(2) == 0,
	}
	if i%7 == 0 {
		f.Correlation = pick(func(e projections.Entry) []string { return []string{e.Correlation} })
	}
	if r.IntN(2) == 0 {
		f.From = all[r.IntN(len(all))].At
	}
	return f
}
