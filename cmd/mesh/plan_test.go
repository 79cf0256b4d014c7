package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/api"
)

// movedForge writes the example forge module with its data moved on the
// host (/var/lib/forge to /srv/forge, still at /data in the container), the
// move of seed 002, and returns the file.
func movedForge(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/modules/forge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(b), "{source: /var/lib/forge, target: /data}", "{source: /srv/forge, target: /data}", 1)
	if moved == string(b) {
		t.Fatal("the example forge module no longer mounts /var/lib/forge at /data")
	}
	file := filepath.Join(t.TempDir(), "forge.yaml")
	if err := os.WriteFile(file, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// storeSize is how many bytes the store file holds: a plan appends nothing.
func storeSize(t *testing.T, dir string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestPlanGolden(t *testing.T) {
	dir := upExample(t)
	if code, out, errOut := mesh(t, "module", "define", movedForge(t), "--data", dir); code != exitOK {
		t.Fatalf("define: exit %d\n%s%s", code, out, errOut)
	}
	size := storeSize(t, dir)
	goldenCases(t, dir, []goldenCase{
		{"plan-novox", []string{"plan", "novox"}, false, nil},
		{"plan-json", []string{"plan", "-o", "json", "novox"}, false, nil},
	})
	// A heavy plan: releasing route-proxy removes two of the three
	// resources left (ca is held, never created). Exit 4, in both modes.
	for _, m := range modes {
		if *update && m.name != "local" {
			continue
		}
		t.Run(m.name+"/heavy", func(t *testing.T) {
			flags, stop := m.start(t, dir)
			defer stop()
			code, out, errOut := mesh(t, append([]string{"plan", "--after", "release route-proxy novox", "novox"}, flags...)...)
			if code != exitHeavy {
				t.Fatalf("exit %d, want %d (heavy)\n%s%s", code, exitHeavy, out, errOut)
			}
			if !strings.HasPrefix(out, "as if first: release route-proxy novox\n\nnovox: HEAVY:") {
				t.Fatalf("a heavy plan does not say so first:\n%s", out)
			}
			golden(t, "plan-heavy", out, dir)
		})
	}
	if got := storeSize(t, dir); got != size {
		t.Fatalf("planning grew the store from %d to %d bytes", size, got)
	}
}

// TestPlanRefusesAnUnknownAfter: --after takes the commands plan knows, and
// refuses the rest as bad usage, exit 2, naming the flag (a malformed flag
// value); a command it knows that the mesh refuses is exit 3 (nothing is
// written: nothing ever is).
func TestPlanRefusesAnUnknownAfter(t *testing.T) {
	dir := upExample(t)
	for _, after := range []string{"destroy forge", "deploy", "take route-proxy"} {
		code, out, errOut := mesh(t, "plan", "--after", after, "--data", dir)
		if code != exitUsage || !strings.Contains(errOut, `for "--after" flag`) {
			t.Errorf("--after %q: exit %d\n%s%s", after, code, out, errOut)
		}
	}
	code, out, errOut := mesh(t, "plan", "--after", "take forge g14", "--data", dir)
	if code != exitRejected || !strings.Contains(errOut, "not-adopted") {
		t.Errorf("--after a refused take: exit %d\n%s%s", code, out, errOut)
	}
}

// TestPlanJSONIsThePublicForm: the JSON form decodes into api.PlanResponse
// and names the changed field with what it was and becomes.
func TestPlanJSONIsThePublicForm(t *testing.T) {
	dir := upExample(t)
	if code, out, errOut := mesh(t, "module", "define", movedForge(t), "--data", dir); code != exitOK {
		t.Fatalf("define: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mesh(t, "plan", "-o", "json", "--data", dir, "novox")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var resp api.PlanResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Nodes) != 1 || resp.Heavy {
		t.Fatalf("plan: %+v", resp)
	}
	for _, s := range resp.Nodes[0].Steps {
		if s.Name == "forge-web" && s.Action == "replace" && len(s.Changes) == 1 &&
			s.Changes[0].Field == "mounts./data" && s.Changes[0].From == "/var/lib/forge" && s.Changes[0].To == "/srv/forge" {
			return
		}
	}
	t.Fatalf("no replace of forge-web naming mounts./data from /var/lib/forge to /srv/forge:\n%s", out)
}
