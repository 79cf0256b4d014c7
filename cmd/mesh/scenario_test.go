package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScenarioRun(t *testing.T) {
	code, out, errOut := mesh(t, "scenario", "run", "--format", "progress", "--seed", "7", "../../features/03_holds.feature")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	feature, err := os.ReadFile("../../features/03_holds.feature")
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(feature), "Scenario:")
	if want := fmt.Sprintf("%d scenarios (%d passed)", n, n); !strings.Contains(out, want) {
		t.Fatalf("output does not say %q:\n%s", want, out)
	}
	failing := filepath.Join(t.TempDir(), "failing.feature")
	if err := os.WriteFile(failing, []byte(`Feature: a failing check
  Scenario: wrong wording
    Given a mesh with nodes "novox"
    And module "web" with containers "web"
    And module "web" is assigned to "novox"
    When 1 passes run on "novox"
    Then the apply report of "novox" reads "applied 2 resource(s)"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = mesh(t, "scenario", "run", "--store", "bolt", failing)
	if code != exitFailed || !strings.Contains(out, `"applied 1 resource(s)"`) {
		t.Fatalf("a failing scenario: exit %d\n%s", code, out)
	}
}
