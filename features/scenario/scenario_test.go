package scenario_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog/colors"
	"github.com/jackc/pgx/v5"

	"meshplane/events/pgstore/pgtest"
	"meshplane/features"
	"meshplane/features/scenario"
)

// srv is the package's shared PostgreSQL cluster (pgtest.Main).
var srv *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &srv)) }

const holds = "../03_holds.feature"

// scenarios is how many scenarios file holds.
func scenarios(t *testing.T, file string) int {
	t.Helper()
	feature, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(feature), "Scenario:")
}

func write(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckFeatures(t *testing.T) {
	dir := t.TempDir()
	long := "Feature: long\n  Scenario: x\n    Given a mesh with nodes \"" + strings.Repeat("n", scenario.MaxFeatureLine) + "\"\n"
	justShort := "Feature: short\n" + strings.Repeat("#", scenario.MaxFeatureLine-1) + "\n"
	good := write(t, filepath.Join(dir, "good", "a.feature"), "Feature: a\n  Scenario: b\n")
	write(t, filepath.Join(dir, "good", "notes.txt"), long) // not a feature file: godog reads none
	write(t, filepath.Join(dir, "good", "short.feature"), justShort)
	longFile := write(t, filepath.Join(dir, "bad", "sub", "long.feature"), long)
	for _, tc := range []struct {
		name, path, want string // want "": no error
	}{
		{"a file", good, ""},
		{"FILE:LINE", good + ":2", ""},
		{"a directory", filepath.Dir(good), ""},
		{"a long line", longFile, longFile + ":3: a line longer than 64 KiB"},
		{"a long line, FILE:LINE", longFile + ":1", longFile + ":3: a line longer than 64 KiB"},
		{"a long line under a directory", filepath.Join(dir, "bad"), longFile + ":3: a line longer than 64 KiB"},
		{"missing", filepath.Join(dir, "none.feature"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := scenario.CheckFeatures(tc.path)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckFeatures(%s): %v", tc.path, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckFeatures(%s): %v, want %q", tc.path, err, tc.want)
			}
		})
	}
	if err := scenario.CheckFeatures(filepath.Join(dir, "none.feature")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestParseStore(t *testing.T) {
	for _, tc := range []struct {
		store, env, kind, refused string // refused: what the ErrStore says
	}{
		{"memory", "", features.StoreMemory, ""},
		{"bolt", "", features.StoreBolt, ""},
		{"postgres", "", features.StorePostgres, ""},
		{"postgres://u@h/db", "", features.StorePostgres, ""},
		{"postgresql://u@h/db", "", features.StorePostgres, ""},
		{"esdb://h:2113?tls=false", "", features.StoreESDB, ""},
		{"kurrentdb://h:2113", "", features.StoreESDB, ""},
		{"esdb", "esdb://h:2113?tls=false", features.StoreESDB, ""},
		{"esdb", "", "", scenario.EnvESDBURL + "=esdb://HOST:2113?tls=false or give --store esdb://HOST:2113"},
		{"mysql://u:secret@h/db", "", "", `--store "mysql://u:xxxxx@h/db": want memory, bolt, postgres, esdb, postgres://... or esdb://...`},
		{"", "", "", `--store "": want memory, bolt, postgres, esdb`},
	} {
		t.Run(tc.store+" "+tc.env, func(t *testing.T) {
			t.Setenv(scenario.EnvESDBURL, tc.env)
			s, err := scenario.ParseStore(tc.store)
			if tc.refused != "" {
				if !errors.Is(err, scenario.ErrStore) || !strings.Contains(err.Error(), tc.refused) || strings.Contains(err.Error(), "secret") {
					t.Errorf("ParseStore(%q): %v, want ErrStore saying %q, no password", tc.store, err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseStore(%q): %v", tc.store, err)
			}
			if s.Kind() != tc.kind || s.Options().Store != tc.kind {
				t.Errorf("ParseStore(%q) is a %s store, want %s", tc.store, s.Kind(), tc.kind)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRun runs a feature file, a failing scenario, and runs of no
// scenario, each saying why.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	failing := write(t, filepath.Join(dir, "failing.feature"), `Feature: a failing check
  Scenario: wrong wording
    Given a mesh with nodes "novox"
    And module "web" with containers "web"
    And module "web" is assigned to "novox"
    When 1 passes run on "novox"
    Then the apply report of "novox" reads "applied 2 resource(s)"
`)
	empty := write(t, filepath.Join(dir, "empty.feature"), "Feature: nothing yet\n")
	long := write(t, filepath.Join(dir, "long.feature"), "Feature: long\n\n# "+strings.Repeat("x", scenario.MaxFeatureLine)+"\n")
	n := scenarios(t, holds)
	for _, tc := range []struct {
		name  string
		o     scenario.Options
		is    error  // nil: no error
		want  string // in the report, or in the error
		inErr bool
	}{
		{"holds", scenario.Options{Paths: []string{holds}, Format: "progress", Seed: 7}, nil, fmt.Sprintf("%d scenarios (%d passed)", n, n), false},
		{"failing", scenario.Options{Paths: []string{failing}}, scenario.ErrFailed, `"applied 1 resource(s)"`, false},
		{"failing's status", scenario.Options{Paths: []string{failing}}, scenario.ErrFailed, "scenarios failed (godog status 1)", true},
		{"empty", scenario.Options{Paths: []string{empty}}, scenario.ErrNoneRan, "no scenario ran: the files hold none", true},
		{"no tag matches", scenario.Options{Paths: []string{holds}, Tags: "@nothing"}, scenario.ErrNoneRan, `no scenario ran: none matches --tags "@nothing"`, true},
		{"a long line", scenario.Options{Paths: []string{holds, long}}, nil, long + ":3: a line longer than 64 KiB", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tc.o.Output = colors.Uncolored(&out)
			err := scenario.Run(tc.o)
			switch {
			case tc.is != nil && !errors.Is(err, tc.is):
				t.Fatalf("Run: %v, want %v\n%s", err, tc.is, out.String())
			case tc.is == nil && !tc.inErr && err != nil:
				t.Fatalf("Run: %v\n%s", err, out.String())
			case tc.inErr && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Run: %v, want an error saying %q", err, tc.want)
			case !tc.inErr && !strings.Contains(out.String(), tc.want):
				t.Fatalf("the report does not say %q:\n%s", tc.want, out.String())
			}
			if tc.name == "a long line" && out.Len() > 0 {
				t.Errorf("a scenario ran before the files were checked:\n%s", out.String())
			}
		})
	}
}

// TestRunStores runs one feature file on PostgreSQL, both ways: a
// throwaway cluster of the run's own, and a server given by URL (a fresh
// database per scenario, dropped after it). Without PostgreSQL it fails
// under CI.
func TestRunStores(t *testing.T) {
	pgtest.Need(t, srv)
	n := scenarios(t, holds)
	url := srv.Database(t)
	for _, tc := range []struct{ name, store string }{
		{"pgtest", "postgres"},
		{"url", url},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenario.ParseStore(tc.store)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = scenario.Run(scenario.Options{Paths: []string{holds}, Store: s, Format: "progress", Seed: 7, Output: colors.Uncolored(&out)})
			if cerr := s.Close(); cerr != nil {
				t.Errorf("close: %v", cerr)
			}
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			if want := fmt.Sprintf("%d scenarios (%d passed)", n, n); !strings.Contains(out.String(), want) {
				t.Fatalf("output does not say %q:\n%s", want, out.String())
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var left int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE 'mesh_scenario_%'").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d scenario databases left on the server, want every one dropped", left)
	}
}

// TestOpenIsNotForTheStepLibrarysStores: memory and bolt are the step
// library's to open.
func TestOpenIsNotForTheStepLibrarysStores(t *testing.T) {
	for _, kind := range []string{features.StoreMemory, features.StoreBolt} {
		s, err := scenario.ParseStore(kind)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Open(); err == nil || !strings.Contains(err.Error(), "opened by the step library") {
			t.Errorf("Open on %s: %v, want a refusal", kind, err)
		}
	}
}
