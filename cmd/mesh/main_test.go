package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/boltstore"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// mesh runs the CLI in process and returns its exit code and output.
func mesh(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var (
	uuidRE     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	durationRE = regexp.MustCompile(`in [0-9.]+(µs|ms|s)`)
)

// golden compares got with testdata/name.golden, after replacing what
// changes from run to run (ids, the data directory, durations).
func golden(t *testing.T, name, got, dir string) {
	t.Helper()
	got = strings.ReplaceAll(got, dir, "DATA")
	got = uuidRE.ReplaceAllString(got, "UUID")
	got = durationRE.ReplaceAllString(got, "in DURATION")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/mesh -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func upExample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	code, out, errOut := mesh(t, "up", "--data", dir, "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
	if code != exitOK {
		t.Fatalf("mesh up: exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "up", out, dir)
	return dir
}

func TestGolden(t *testing.T) {
	dir := upExample(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"status", []string{"status"}},
		{"node-show", []string{"node", "show", "novox"}},
		{"timeline-novox", []string{"timeline", "--node", "novox"}},
		{"timeline-applies", []string{"timeline", "--type", "apply.reported", "--limit", "2"}},
		{"timeline-resource", []string{"timeline", "--resource", "ca"}},
		{"why-ca", []string{"why", "novox", "ca"}},
		{"why-forge-web", []string{"why", "novox", "forge-web"}},
		{"churn", []string{"churn"}},
		{"roster", []string{"roster", "g14"}},
		{"roster-history", []string{"roster", "--history", "novox"}},
		{"rebuild", []string{"rebuild"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := mesh(t, append(tc.args, "--data", dir)...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			golden(t, tc.name, out, dir)
		})
	}
}

// A roster diff needs two declarations: an idle pass composes none (it
// pushes the stored one again), so route-proxy is taken first, which changes
// novox's declaration (a taken module is part of its digest) and nothing of
// its roster or resources.
func TestRosterDiffGolden(t *testing.T) {
	dir := upExample(t)
	for _, args := range [][]string{
		{"take", "route-proxy", "novox"},
		{"up", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"},
	} {
		if code, out, errOut := mesh(t, append(args, "--data", dir)...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, errOut := mesh(t, "roster", "--diff", "novox/1,novox/2", "novox", "--data", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "roster-diff", out, dir)
}

// Quiet passes collapse in timeline and why into one line with their count
// and time range; the JSON form keeps them as fields.
func TestCollapsedRunsGolden(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := mesh(t, "up", "--data", dir, "--passes", "6", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"); code != exitOK {
		t.Fatalf("mesh up: exit %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"timeline-collapsed", []string{"timeline", "--node", "novox"}},
		{"why-collapsed", []string{"why", "novox", "ca"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := mesh(t, append(tc.args, "--data", dir)...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			golden(t, tc.name, out, dir)
		})
	}
	t.Run("json", func(t *testing.T) {
		_, out, _ := mesh(t, "timeline", "--data", dir, "--node", "novox", "--type", "apply.reported", "--json")
		var entries []struct {
			Position uint64
			Run      *struct {
				Count         int       `json:"count"`
				From          time.Time `json:"from"`
				To            time.Time `json:"to"`
				FirstPosition uint64    `json:"first_position"`
				LastPosition  uint64    `json:"last_position"`
			}
		}
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatal(err)
		}
		// The first apply created; the five after it changed nothing.
		if len(entries) != 2 || entries[1].Run == nil || entries[1].Run.Count != 5 ||
			entries[1].Run.FirstPosition != entries[1].Position || entries[1].Run.LastPosition <= entries[1].Position {
			t.Fatalf("collapsed JSON:\n%s", out)
		}
	})
}

// Running up again over the same data appends no operator events, and the
// simulated nodes' fresh runtimes are no churn loop.
func TestUpAgain(t *testing.T) {
	dir := upExample(t)
	code, out, errOut := mesh(t, "up", "--data", dir, "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	_, churn, _ := mesh(t, "churn", "--data", dir)
	if !strings.HasPrefix(churn, "no churn") {
		t.Fatalf("churn after a second up:\n%s", churn)
	}
	_, tl, _ := mesh(t, "timeline", "--data", dir, "--type", "module.defined")
	if n := strings.Count(tl, "module.defined"); n != 3 {
		t.Fatalf("%d module.defined events after two ups, want 3:\n%s", n, tl)
	}
}

func TestExitCodes(t *testing.T) {
	dir := upExample(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("module: bad\ncontainers:\n  - name: web\n    imgae: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no command", nil, exitUsage, ""},
		{"help", []string{"--help"}, exitOK, ""},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"missing argument", []string{"why", "--data", dir, "novox"}, exitUsage, "want NODE RESOURCE"},
		{"bad flag", []string{"status", "--nope"}, exitUsage, "flag provided but not defined"},
		{"rejected", []string{"assign", "--data", dir, "ghost", "novox"}, exitRejected, "refused (module-unknown): cannot assign module ghost to novox"},
		{"take on a node not adopted", []string{"take", "--data", dir, "searxng", "g14"}, exitRejected, "not-adopted"},
		{"malformed module file", []string{"module", "define", "--data", dir, bad}, exitFailed, bad + ":4: containers[0].imgae: unknown field"},
		{"no store", []string{"status", "--data", t.TempDir()}, exitFailed, "no event store at"},
		{"bad time", []string{"timeline", "--data", dir, "--since", "yesterday"}, exitUsage, "not an RFC 3339 time"},
		{"scenario without files", []string{"scenario", "run"}, exitUsage, "name at least one feature file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := mesh(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("stderr %q does not contain %q", errOut, tc.stderr)
			}
		})
	}
}

func TestHelpNamesEveryCommand(t *testing.T) {
	_, out, _ := mesh(t, "--help")
	for _, c := range verbs {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("--help does not list %q", c.name)
		}
		code, _, errOut := mesh(t, append(strings.Fields(c.name), "--help")...)
		if code != exitOK || !strings.Contains(errOut, "usage: mesh "+c.name) {
			t.Errorf("mesh %s --help: exit %d, %q", c.name, code, errOut)
		}
	}
}

func TestWriteVerbs(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, []byte("module: web\nroutes: [web.example.org]\ncontainers:\n  - {name: web, image: nginx:1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"node", "register", "a", "b"},
		{"node", "adopt", "a"},
		{"node", "set", "a", "port.store", "6852"},
		{"module", "define", file},
		{"assign", "web", "a"},
		{"take", "web", "a"},
		{"release", "web", "a"},
	} {
		if code, out, errOut := mesh(t, append(args, "--data", dir)...); code != exitOK {
			t.Fatalf("mesh %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	_, out, _ := mesh(t, "timeline", "--data", dir)
	// The CLI stamps events with the wall clock.
	out = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).ReplaceAllString(out, "TIME               ")
	golden(t, "write-verbs-timeline", out, dir)
}

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

// An event of a type this build does not know is kept, skipped by the
// projections, and said so.
func TestUnknownEventsAreCountedNotLost(t *testing.T) {
	dir := upExample(t)
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(context.Background(), "node-novox", events.Any,
		events.Event{ID: events.NewID(), Type: "node.repainted", Schema: 1, Data: []byte(`{"colour":"red"}`)})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range [][]string{{"status"}, {"timeline", "--limit", "1"}, {"rebuild"}} {
		code, out, errOut := mesh(t, append(verb, "--data", dir)...)
		if code != exitOK || !strings.Contains(out, "skipped events of types this build does not know (kept in the store): node.repainted: 1") {
			t.Errorf("mesh %v: exit %d\n%s%s", verb, code, out, errOut)
		}
	}
}
