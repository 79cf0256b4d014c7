package main

import (
	"os/exec"
	"strings"
	"testing"
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
