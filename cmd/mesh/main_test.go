package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/internal/clihelp"
	"meshplane/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// mesh runs the CLI in process and returns its exit code and output. What
// `mesh up` writes is stamped by a simulated clock starting at sim.Epoch on
// every call, so that golden files hold fixed times; TestUpUsesTheWallClock
// runs the CLI with its own clock.
func mesh(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut, now: sim.NewClock(sim.Epoch).Now}
	code := e.run(context.Background(), args)
	return code, out.String(), errOut.String()
}

var (
	uuidRE     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	durationRE = regexp.MustCompile(`in [0-9.]+(µs|ms|s)`)
	// cliTimeRE is the time of a command the test ran itself (mesh deploy,
	// as operator:cli), which why prints: stamped by the wall clock.
	cliTimeRE = regexp.MustCompile(`\(operator:cli, [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}\)`)
)

// golden compares got with testdata/name.golden, after replacing what
// changes from run to run (ids, the data directory, durations).
func golden(t *testing.T, name, got, dir string) {
	t.Helper()
	got = strings.ReplaceAll(got, dir, "DATA")
	got = uuidRE.ReplaceAllString(got, "UUID")
	got = durationRE.ReplaceAllString(got, "in DURATION")
	got = cliTimeRE.ReplaceAllString(got, "(operator:cli, TIME)")
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
	code, out, errOut := mesh(t, "up", "--data", dir, "--passes", "2", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
	if code != exitOK {
		t.Fatalf("mesh up: exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "up", out, dir)
	return dir
}

func TestGolden(t *testing.T) {
	dir := upExample(t)
	goldenCases(t, dir, []goldenCase{
		{"status", []string{"status"}, false, nil},
		{"node-show", []string{"node", "show", "novox"}, false, nil},
		{"timeline-novox", []string{"timeline", "--node", "novox"}, false, nil},
		{"timeline-applies", []string{"timeline", "--type", "apply.reported", "--limit", "2"}, false, nil},
		{"timeline-resource", []string{"timeline", "--resource", "ca"}, false, nil},
		{"why-ca", []string{"why", "novox", "ca"}, false, nil},
		{"why-forge-web", []string{"why", "novox", "forge-web"}, false, nil},
		{"churn", []string{"churn"}, false, nil},
		{"roster", []string{"roster", "g14"}, false, nil},
		{"roster-history", []string{"roster", "--history", "novox"}, false, nil},
		{"rebuild", []string{"rebuild"}, true, nil},
	})
}

// Quiet passes collapse in timeline and why into one line with their count
// and time range; the JSON form keeps them as fields.
func TestCollapsedRunsGolden(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := mesh(t, "up", "--data", dir, "--passes", "6", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"); code != exitOK {
		t.Fatalf("mesh up: exit %d\n%s%s", code, out, errOut)
	}
	goldenCases(t, dir, []goldenCase{
		{"timeline-collapsed", []string{"timeline", "--node", "novox"}, false, nil},
		{"why-collapsed", []string{"why", "novox", "ca"}, false, nil},
	})
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
		{"bad flag", []string{"status", "--nope"}, exitUsage, "unknown flag: --nope"},
		{"bad output", []string{"status", "--data", dir, "-o", "yaml"}, exitUsage, `-o "yaml": want table or json`},
		{"a group alone", []string{"node", "--data", dir}, exitUsage, "name a command: list, show, register, adopt, set"},
		{"a group's unknown verb", []string{"node", "frobnicate", "--data", dir}, exitUsage, `unknown command "frobnicate" for "mesh node"`},
		{"local only", []string{"store", "verify", "--server", "http://127.0.0.1:1"}, exitUsage, "works on a local store only"},
		{"creds for two nodes", []string{"node", "register", "a", "b", "--creds", "x.creds", "--data", dir}, exitUsage, "--creds writes one node's credentials"},
		{"agent without creds", []string{"agent", "--runtime", "sim"}, exitUsage, "give --creds FILE"},
		{"agent on an unknown runtime", []string{"agent", "--creds", "x", "--runtime", "lxc"}, exitUsage, `--runtime "lxc": want sim or docker`},
		{"server and data", []string{"status", "--server", "http://127.0.0.1:1", "--data", dir}, exitUsage, "give --server or --data, not both"},
		{"server without a token", []string{"status", "--server", "http://127.0.0.1:1"}, exitFailed, "no API token for http://127.0.0.1:1"},
		{"rejected", []string{"assign", "--data", dir, "ghost", "novox"}, exitRejected, "refused (module-unknown): cannot assign module ghost to novox"},
		{"take on a node not adopted", []string{"take", "--data", dir, "searxng", "g14"}, exitRejected, "not-adopted"},
		{"malformed module file", []string{"module", "define", "--data", dir, bad}, exitRejected, "refused (invalid): " + bad + ":4: containers[0].imgae: unknown field"},
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

// A panic in any verb exits with a code of its own, its stack on stderr.
func TestPanicExitsWithItsOwnCode(t *testing.T) {
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut, now: wallClock}
	root := e.root()
	root.AddCommand(&cobra.Command{Use: "explode", RunE: func(*cobra.Command, []string) error {
		var cs []commands.Command
		_ = commands.UnchangedNote(cs[len(cs)]) // a runtime panic: index out of range
		return nil
	}})
	code := e.runRoot(context.Background(), root, []string{"explode"})
	if code != exitPanic || code == exitUsage {
		t.Fatalf("exit %d, want %d", code, exitPanic)
	}
	for _, want := range []string{"mesh: panic: runtime error: index out of range [0] with length 0", "goroutine ", "main_test.go"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, errOut.String())
		}
	}
}

// mesh --help lists every verb with its summary, the flags every verb
// takes, the exit codes and where a command works; every verb has its own
// help, cobra's usage.
func TestHelpNamesEveryCommand(t *testing.T) {
	_, out, _ := mesh(t, "--help")
	e := &env{stdout: io.Discard, stderr: io.Discard, now: wallClock}
	vs := clihelp.Verbs(e.root())
	if len(vs) < 20 {
		t.Fatalf("%d verbs, want every one", len(vs))
	}
	for _, c := range vs {
		name := clihelp.Name(c)
		if !strings.Contains(out, "  "+name+" ") || c.Short == "" {
			t.Errorf("--help does not list %q with a summary", name)
		}
		code, vout, verr := mesh(t, append(strings.Fields(name), "--help")...)
		if code != exitOK || !strings.Contains(vout, "Usage:\n  mesh "+name) {
			t.Errorf("mesh %s --help: exit %d, %q%q", name, code, vout, verr)
		}
	}
	for _, want := range []string{"--data directory", "--server URL", "--token-file file", "--tls-ca file", "Exit codes:", "70 a bug", "MESH_SERVER", "MESH_TOKEN", "controller.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not say %q", want)
		}
	}
}

// Flags go anywhere on the line: before the verb, between its arguments,
// after them.
func TestFlagsAnywhere(t *testing.T) {
	dir := upExample(t)
	want, err := os.ReadFile("testdata/why-ca.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--data", dir, "why", "novox", "ca"},
		{"why", "--data", dir, "novox", "ca"},
		{"why", "novox", "--data", dir, "ca"},
		{"why", "novox", "ca", "--data=" + dir},
	} {
		code, out, errOut := mesh(t, args...)
		if code != exitOK || uuidRE.ReplaceAllString(out, "UUID") != string(want) {
			t.Errorf("mesh %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// mesh completion writes each shell's script.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := mesh(t, "completion", sh)
		if code != exitOK || !strings.Contains(out, "mesh") || len(out) < 1000 {
			t.Errorf("mesh completion %s: exit %d, %d bytes\n%s", sh, code, len(out), errOut)
		}
	}
	dir := upExample(t)
	// cobra's hidden __complete is what the scripts call.
	_, out, _ := mesh(t, "__complete", "--data", dir, "status", "")
	if !strings.Contains(out, "g14\nnovox\n") {
		t.Errorf("node names do not complete:\n%s", out)
	}
	_, out, _ = mesh(t, "__complete", "status", "-o", "")
	if !strings.Contains(out, "table\njson\n") {
		t.Errorf("-o does not complete:\n%s", out)
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

// countEvents counts the events of the mesh flags name, through the CLI
// (the timeline's, which are every event).
func countEvents(t *testing.T, flags []string) int {
	t.Helper()
	code, out, errOut := mesh(t, append([]string{"timeline", "-o", "json"}, flags...)...)
	if code != exitOK {
		t.Fatalf("timeline: exit %d\n%s%s", code, out, errOut)
	}
	var entries []struct {
		Run *struct {
			Count int `json:"count"`
		} `json:"run"`
	}
	mustJSON(t, out, &entries)
	n := 0
	for _, en := range entries {
		if en.Run != nil {
			n += en.Run.Count // a collapsed run of quiet passes
		} else {
			n++
		}
	}
	return n
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v:\n%s", err, s)
	}
}

func readAll(t *testing.T, dir string) []events.Event {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
