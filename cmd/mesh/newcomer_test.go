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

// TestMomentBeforeTheFirstEvent: --at, diff --from and revert --to read a
// moment one way and give one answer: position 0, or a time before the
// first event's, is refused (exit 3) with one sentence naming the first
// event's time; the first event's own time is a moment of the history for
// all three. (The example's first event is at the simulation's epoch,
// 2026-09-29T22:00:00Z.)
func TestMomentBeforeTheFirstEvent(t *testing.T) {
	dir := upExample(t)
	const first, before = "2026-09-29T22:00:00Z", "2026-09-29T21:59:59Z"
	// timeline --until POSITION is the timeline --at it; --until TIME
	// is a filter (events before it), where nothing is an answer.
	if code, out, errOut := mesh(t, "timeline", "--until", "0", "--data", dir); code != exitRejected || !strings.Contains(errOut, "is before the first event") {
		t.Errorf("mesh timeline --until 0: exit %d, %s%s; want %d", code, out, errOut, exitRejected)
	}
	for _, moment := range []string{"0", before} {
		for _, args := range [][]string{
			{"status", "--at", moment},
			{"diff", "--from", moment},
			{"diff", "--from", "1", "--to", moment},
			{"revert", "forge", "--to", moment},
		} {
			code, out, errOut := mesh(t, append(args, "--data", dir)...)
			if code != exitRejected || !strings.Contains(errOut, "is before the first event") {
				t.Errorf("mesh %s: exit %d, %s%s; want %d, before the first event", strings.Join(args, " "), code, out, errOut, exitRejected)
			}
			if moment == before && !strings.Contains(errOut, "(position 1, at "+first+")") {
				t.Errorf("mesh %s: %s; want the first event's time named", strings.Join(args, " "), errOut)
			}
		}
	}
	for _, args := range [][]string{
		{"status", "--at", first},
		{"diff", "--from", first},
	} {
		if code, out, errOut := mesh(t, append(args, "--data", dir)...); code != exitOK {
			t.Errorf("mesh %s: exit %d, %s%s; want %d", strings.Join(args, " "), code, out, errOut, exitOK)
		}
	}
}
