package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/internal/meshtest"
)

// testTooling are the packages written for tests only: the shipped binary
// links none of them (what `mesh scenario run --store postgres` and `mesh
// sim --store postgres` need of PostgreSQL is events/pgstore/pgscratch).
var testTooling = []string{
	"meshplane/events/pgstore/pgtest",
	"meshplane/internal/testtls",
	"meshplane/internal/hosttest",
	"meshplane/bus/natstest",
	"meshplane/agent/runtimetest",
	"meshplane/events/storetest",
	"meshplane/internal/jsontest",
	"meshplane/internal/meshtest",
	"meshplane/events/esdbstore/esdbdouble",
}

// TestBinaryLinksNoTestTooling: go list -deps of the binary names none of
// testTooling.
func TestBinaryLinksNoTestTooling(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps answered %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		for _, bad := range testTooling {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("the mesh binary links %s, a package for tests only", d)
			}
		}
	}
}

// TestBinaryRunsNoGo: the binary runs no program it was not asked to run.
// A fake `go` first on PATH writes a marker when started; no verb, from
// `mesh version` to a scenario run, may start it (godog's builder once ran
// `go env GOTOOLDIR` in an init, on every run of every verb).
func TestBinaryRunsNoGo(t *testing.T) {
	bin := meshtest.MeshBinary.Get(t)
	dir := t.TempDir()
	fakeBin := filepath.Join(dir, "bin")
	marker := filepath.Join(dir, "go-was-run")
	if err := os.MkdirAll(fakeBin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$@\" >> " + marker + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(fakeBin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	feature := filepath.Join(dir, "tiny.feature")
	if err := os.WriteFile(feature, []byte(`Feature: tiny
  Scenario: a mesh of one node
    Given a mesh with nodes "n1"
    And module "m" with containers "c"
    And module "m" is assigned to "n1"
    When the mesh is pushed to "n1"
    Then the event stream has 0 "declaration.compose-failed" events for "n1"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "data")
	if err := os.MkdirAll(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	for _, args := range [][]string{
		{"version"},
		{"--help"},
		{"status", "--data", empty},
		{"scenario", "run", feature},
	} {
		t.Run(strings.Join(args[:1], " "), func(t *testing.T) {
			if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if args[0] == "scenario" && err != nil {
				t.Errorf("mesh %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("mesh %s started the `go` first on PATH (args: %s)", strings.Join(args, " "), strings.TrimSpace(string(b)))
			} else if !os.IsNotExist(err) {
				t.Fatal(err)
			}
		})
	}
}
