package main

import (
	"strings"
	"testing"
)

// TestTimelineSinceDuration: --since takes a duration before now, as
// kubectl's and journalctl's do, besides an RFC 3339 time; a duration of
// 0 or less is bad usage. (The test's clock is the simulation's epoch, at
// the example's first event: 10m before it is before every event.)
func TestTimelineSinceDuration(t *testing.T) {
	dir := upExample(t)
	_, all, _ := mesh(t, "timeline", "--data", dir)
	code, out, errOut := mesh(t, "timeline", "--since", "10m", "--data", dir)
	if code != exitOK || out != all {
		t.Errorf("timeline --since 10m: exit %d\n%s%s\nwant every event:\n%s", code, out, errOut, all)
	}
	if code, out, errOut := mesh(t, "timeline", "--since", "0s", "--data", dir); code != exitUsage || !strings.Contains(errOut, "above 0") {
		t.Errorf("timeline --since 0s: exit %d, %s%s; want %d", code, out, errOut, exitUsage)
	}
}

// TestUpHelpShowsNoUnusedDefault: mesh up --help shows no default --mesh
// or --modules, since a plain up sets up nothing; it says which file
// --once and --passes take without one.
func TestUpHelpShowsNoUnusedDefault(t *testing.T) {
	code, out, _ := mesh(t, "up", "--help")
	if code != exitOK {
		t.Fatalf("mesh up --help: exit %d", code)
	}
	for _, line := range strings.Split(out, "\n") {
		if (strings.Contains(line, "--mesh ") || strings.Contains(line, "--modules ")) && strings.Contains(line, "(default ") {
			t.Errorf("mesh up --help shows a default a plain up does not use: %s", line)
		}
	}
	for _, want := range []string{exampleMesh, exampleModules, "a plain up sets up nothing"} {
		if !strings.Contains(out, want) {
			t.Errorf("mesh up --help does not say %q", want)
		}
	}
}
