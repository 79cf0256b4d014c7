package main

import (
	"testing"
)

// A roster diff needs two declarations: an idle pass composes none (it
// pushes the stored one again), so route-proxy is taken first, which changes
// novox's declaration (a taken module is part of its digest) and nothing of
// its roster or resources.
func TestRosterDiffGolden(t *testing.T) {
	dir := upExample(t)
	for _, args := range [][]string{
		{"take", "route-proxy", "novox"},
		{"up", "--passes", "2", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"},
	} {
		if code, out, errOut := mesh(t, append(args, "--data", dir)...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	goldenCases(t, dir, []goldenCase{{"roster-diff", []string{"roster", "--diff", "novox/1,novox/2", "novox"}, false, nil}})
}
