package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/events/esdbstore/esdbdouble"
	"meshplane/features/scenario"
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

// TestScenarioRunStoreRefused: the stores scenario run cannot open are
// refused before any scenario runs, saying what to give.
func TestScenarioRunStoreRefused(t *testing.T) {
	t.Setenv(scenario.EnvESDBURL, "")
	for _, tc := range []struct{ store, want string }{
		{"esdb", scenario.EnvESDBURL},
		{"mysql://h/db", "want memory, bolt, postgres, esdb"},
	} {
		t.Run(tc.store, func(t *testing.T) {
			code, out, errOut := mesh(t, "scenario", "run", "--store", tc.store, "../../features/03_holds.feature")
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", code, exitUsage, tc.want, out, errOut)
			}
		})
	}
}

// TestStoreEsdbAgainstDouble runs the CLI's KurrentDB paths against the
// gRPC double of package esdbdouble (NOT KurrentDB: the calls esdbstore
// makes, and only those): scenario run --store esdb://..., and write and
// read verbs with --store esdb://... giving what they give on bolt.
func TestStoreEsdbAgainstDouble(t *testing.T) {
	d, err := esdbdouble.Start(esdbdouble.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	const file = "../../features/03_holds.feature"
	feature, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(feature), "Scenario:")
	code, out, errOut := mesh(t, "scenario", "run", "--store", d.URL(), "--format", "progress", "--seed", "7", file)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("%d scenarios (%d passed)", n, n)) {
		t.Fatalf("scenario run --store esdb://: exit %d\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	if code, out, errOut := mesh(t, "node", "register", "novox", "g14", "--store", d.URL(), "--data", dir); code != exitOK {
		t.Fatalf("node register --store esdb://: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = mesh(t, "status", "-o", "json", "--store", d.URL(), "--data", dir)
	if code != exitOK || !strings.Contains(out, `"novox"`) || !strings.Contains(out, `"g14"`) {
		t.Fatalf("status --store esdb://: exit %d\n%s%s", code, out, errOut)
	}
}
