package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// replayHistory runs mesh sim into a data directory with faults and exports
// its history to a file.
func replayHistory(t *testing.T, faults string) string {
	t.Helper()
	dir := t.TempDir()
	if code, _, stderr := mesh(t, "sim", "--data", dir, "--nodes", "3", "--modules", "4", "--passes", "6", "--faults", faults); code != 0 && code != 1 {
		t.Fatalf("sim: exit %d: %s", code, stderr)
	}
	file := filepath.Join(t.TempDir(), "history.jsonl")
	if code, _, stderr := mesh(t, "export", "--data", dir, "-f", file); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	return file
}

// TestReplayVerb: mesh replay of a history this build recorded agrees
// (exit 0, the JSON report's shape), to the end and --until a position;
// one recorded with seed 000's swallowed read (sim's lossy fault) does
// not (exit 1, the divergence printed); a file that is not one is an
// error.
func TestReplayVerb(t *testing.T) {
	file := replayHistory(t, "reads:count=1,passes=2-3;remove:count=1,passes=4")
	code, out, stderr := mesh(t, "replay", file, "-o", "json")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s%s", code, out, stderr)
	}
	var rep struct {
		Agree       *bool            `json:"agree"`
		Passes      int              `json:"passes"`
		Through     uint64           `json:"through"`
		Inputs      map[string]any   `json:"inputs"`
		Recorded    map[string]int   `json:"recorded"`
		Divergences []map[string]any `json:"divergences"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Agree == nil || !*rep.Agree || rep.Passes < 6 || rep.Divergences == nil || len(rep.Divergences) != 0 ||
		rep.Inputs["failed_reads"] == nil || rep.Recorded["applies"] == 0 {
		t.Fatalf("report %s", out)
	}
	code, out, stderr = mesh(t, "replay", file, "--until", "20")
	if code != 0 || !strings.Contains(out, "through position 20 ") || !strings.Contains(out, "the runs agree") {
		t.Fatalf("--until 20: exit %d: %s%s", code, out, stderr)
	}

	lossy := replayHistory(t, "lossy:count=1,passes=2-5")
	code, out, stderr = mesh(t, "replay", lossy)
	if code != 1 || !strings.Contains(out, "the runs diverge") || !strings.Contains(out, "compose") {
		t.Fatalf("lossy history: exit %d: %s%s", code, out, stderr)
	}

	if code, _, stderr := mesh(t, "replay", filepath.Join(t.TempDir(), "none.jsonl")); code != 1 || !strings.Contains(stderr, "none.jsonl") {
		t.Fatalf("missing file: exit %d: %s", code, stderr)
	}
}
