package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// simArgs is a small run with a loop, a flip, a roll-out and a store in
// recovery: every part of the summary has something to say.
var simArgs = []string{"sim", "--store", "memory", "--nodes", "5", "--modules", "6", "--passes", "10", "--seed", "4",
	"--faults", "remove:count=1,passes=2-4;lossy:count=1,passes=5-7,every=2;reads:count=1,passes=8;rollout:passes=9"}

func TestSimSummary(t *testing.T) {
	code, out, errOut := mesh(t, simArgs...)
	if code != exitOK {
		t.Fatalf("mesh sim: exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "sim", out, "/no-data-dir")

	code, out, errOut = mesh(t, append(simArgs, "-o", "json")...)
	if code != exitOK {
		t.Fatalf("mesh sim -o json: exit %d\n%s%s", code, out, errOut)
	}
	var sum struct {
		Score struct {
			Recall   float64 `json:"recall"`
			Injected int     `json:"injected"`
		} `json:"score"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if sum.Score.Injected == 0 || sum.Score.Recall != 1 {
		t.Errorf("-o json score %+v: want injected episodes, all found", sum.Score)
	}
	golden(t, "sim-json", out, "/no-data-dir")
}

func TestSimLeavesTheStreamInTheStore(t *testing.T) {
	dir := t.TempDir()
	args := []string{"sim", "--data", dir, "--nodes", "3", "--modules", "3", "--passes", "4", "--faults", "remove:count=1,passes=1-3"}
	if code, out, errOut := mesh(t, args...); code != exitOK {
		t.Fatalf("mesh sim: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mesh(t, "churn", "--data", dir)
	if code != exitOK || !strings.Contains(out, "loop") {
		t.Fatalf("mesh churn after mesh sim: exit %d, want the loop it injected\n%s%s", code, out, errOut)
	}
	// A second run refuses the store it left: it writes a mesh of its own.
	code, _, errOut = mesh(t, args...)
	if code != exitFailed || !strings.Contains(errOut, "already holds") {
		t.Errorf("mesh sim on a used store: exit %d, %q; want 1 and a refusal", code, errOut)
	}
}

func TestSimUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--faults", "remove:rate=2"}, `--faults: fault spec: fault 1 "remove:rate=2": rate "2": want more than 0 and at most 1`},
		{[]string{"sim", "--faults", "flood"}, `unknown kind "flood"`},
		{[]string{"sim", "--nodes", "0"}, "--nodes 0: want at least 1"},
		{[]string{"sim", "--store", "esdb://x"}, `--store "esdb://x": want memory, bolt, postgres or postgres://URL`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := mesh(t, append(tc.args, "--data", t.TempDir())...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d naming %q", code, errOut, exitUsage, tc.want)
			}
		})
	}
}
