package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRevertVerb: mesh revert, on a local store and against a controller
// over it: a revert to the moment after forge's first definition appends
// it again, naming the revert; again it says nothing changes; a moment
// before forge was defined is refused (exit 3), a --to that is neither a
// time nor a position, or none, is bad usage (exit 2). mesh plan --after
// "revert ..." appends nothing.
func TestRevertVerb(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(t.TempDir(), "forge.yaml")
			for _, image := range []string{"forge:1", "forge:2"} {
				if err := os.WriteFile(file, []byte("module: forge\ncontainers:\n  - name: web\n    image: registry.example/"+image+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if code, out, errOut := mesh(t, "module", "define", file, "--data", dir); code != exitOK {
					t.Fatalf("define %s: exit %d %s%s", image, code, out, errOut)
				}
			}
			flags, stop := m.start(t, dir)
			defer stop()
			run := func(want int, args ...string) string {
				t.Helper()
				code, out, errOut := mesh(t, append(args, flags...)...)
				if code != want {
					t.Fatalf("mesh %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
				}
				return out + errOut
			}
			if out := run(exitOK, "plan", "--after", "revert forge --to 1"); countEvents(t, flags) != 2 {
				t.Fatalf("the plan appended: %s", out)
			}
			out := run(exitOK, "revert", "forge", "--to", "1")
			if !strings.Contains(out, "module forge reverted to 1, as it stood after position 1") || !strings.Contains(out, "module-forge #3 module.defined") {
				t.Errorf("revert: %s", out)
			}
			if out := run(exitOK, "revert", "forge", "--to", "1"); !strings.Contains(out, "module forge is already as it was at 1") || !strings.Contains(out, "nothing to do") {
				t.Errorf("revert again: %s", out)
			}
			if out := run(exitRejected, "revert", "forge", "--to", "0"); !strings.Contains(out, "before the first event") {
				t.Errorf("revert to before forge: %s", out)
			}
			if out := run(exitRejected, "revert", "gitea", "--to", "1"); !strings.Contains(out, "never defined") {
				t.Errorf("revert of a module never defined: %s", out)
			}
			for _, args := range [][]string{{"revert", "forge", "--to", "yesterday"}, {"revert", "forge"}, {"revert", "--to", "1"}} {
				run(exitUsage, args...)
			}
			stop()
			evs := readAll(t, dir)
			if len(evs) != 3 || evs[2].Causation != "revert forge --to 1" || !strings.Contains(string(evs[1].Data), "registry.example/forge:2") {
				t.Errorf("the store does not hold the revert after what came before: %v", evs)
			}
		})
	}
}
