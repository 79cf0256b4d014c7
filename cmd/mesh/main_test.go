package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
	goldenCases(t, dir, []goldenCase{{"roster-diff", []string{"roster", "--diff", "novox/1,novox/2", "novox"}, false, nil}})
}

// Quiet passes collapse in timeline and why into one line with their count
// and time range; the JSON form keeps them as fields.
func TestCollapsedRunsGolden(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := mesh(t, "up", "--data", dir, "--passes", "6", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"); code != exitOK {
		t.Fatalf("mesh up: exit %d\n%s%s", code, out, errOut)
	}
	goldenCases(t, dir, []goldenCase{
		// projections.Entry keeps whether an apply changed nothing in an
		// unexported field, which the API's JSON does not carry: from a
		// controller a run of idle applies reads "the same", not "nothing
		// changed". (The field is the projections package's to put on the
		// wire.)
		{"timeline-collapsed", []string{"timeline", "--node", "novox"}, false, func(t *testing.T, s string) string {
			if !strings.Contains(s, "; the same, 5 passes") {
				t.Error("the idle flag crosses the wire now: drop this remoteGap")
			}
			return strings.ReplaceAll(s, "; the same, 5 passes", "; nothing changed, 5 passes")
		}},
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
	if !strings.Contains(out, "set-up: 15 of 15 command(s) found their work already done, nothing to do") {
		t.Fatalf("a second up does not say its set-up was already done:\n%s", out)
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
		{"bad flag", []string{"status", "--nope"}, exitUsage, "unknown flag: --nope"},
		{"bad output", []string{"status", "--data", dir, "-o", "yaml"}, exitUsage, `-o "yaml": want table or json`},
		{"a group alone", []string{"node", "--data", dir}, exitUsage, "name a command: show, register, adopt, set"},
		{"a group's unknown verb", []string{"node", "frobnicate", "--data", dir}, exitUsage, `unknown command "frobnicate" for "mesh node"`},
		{"local only", []string{"rebuild", "--server", "http://127.0.0.1:1"}, exitUsage, "works on a local store only"},
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

// Refused at the door: every one exits 3 (or 1 for a scenario run that ran
// nothing) with a message naming what was wrong, and writes nothing.
func TestRefusedAtTheDoor(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	dir := upExample(t)
	files := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	web := write("web.yaml", "module: web\nroutes: [web.example.org]\ncontainers:\n  - {name: web, image: nginx:1}\n")
	web2 := write("web2.yaml", "module: web\ncontainers:\n  - {name: web, image: nginx:2}\n")
	www := write("www.yaml", "module: www\nroutes: [web.example.org]\ncontainers:\n  - {name: www, image: nginx:1}\n")
	proxy := write("proxy.yaml", "module: proxy2\nroutes: [proxy.novox.be]\ncontainers:\n  - {name: p, image: caddy:2}\n")
	unclean := write("unclean.yaml", "module: data\ndirectories:\n  - {path: /srv//data/., mode: \"0700\"}\n")
	twice := write("twice.yaml", "module: data\ndirectories:\n  - {path: /srv/data}\nfiles:\n  - {path: /srv/data}\n")
	long := strings.Repeat("n", 1<<20)
	longFile := write("long.yaml", "module: "+long[:100_000]+"\n")
	mods := "../../examples/modules"
	meshTwice := write("twice-mesh.yaml", "nodes:\n  - {name: a}\n  - {name: b}\n  - {name: a}\n")
	meshDigest := write("digest-mesh.yaml", "nodes:\n  - {name: a}\nartifacts:\n  - {module: forge, name: forge/web, digest: \"sha256:ab12cd34\"}\n")
	meshBadNode := write("bad-node-mesh.yaml", "nodes:\n  - {name: a}\n  - {name: B}\n")
	emptyFeature := write("empty.feature", "Feature: nothing\n")
	longLine := write("long.feature", "Feature: long\n  Scenario: one\n    Given a mesh with nodes \""+strings.Repeat("a", 70_000)+"\"\n")
	noFeatures := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{"a long node name, shortened", []string{"node", "register", long}, exitRejected,
			[]string{`refused (invalid): node name "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"… (1048576 bytes)`}},
		{"one bad node of three writes none", []string{"node", "register", "x1", "X2", "x3"}, exitRejected,
			[]string{`node name "X2"`, "none of the 3 was written"}},
		{"a long module name, shortened", []string{"module", "define", longFile}, exitRejected,
			[]string{`module: "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"… (100000 bytes)`}},
		{"two files define one module", []string{"module", "define", web, web2}, exitRejected,
			[]string{web2 + ": module: module web is also defined by " + web}},
		{"two files route one name, neither written", []string{"module", "define", web, www}, exitRejected,
			[]string{"refused (route-claimed): module www routes web.example.org, which module web already routes", "none of the 2 was written"}},
		{"a name another module routes", []string{"module", "define", proxy}, exitRejected,
			[]string{"module proxy2 routes proxy.novox.be, which module route-proxy already routes"}},
		{"a path that is not clean", []string{"module", "define", unclean}, exitRejected,
			[]string{unclean + `:3: directories[0].path: "/srv//data/." is not a clean path: write "/srv/data"`}},
		{"a path declared twice", []string{"module", "define", twice}, exitRejected,
			[]string{twice + ":5: files[0].path: /srv/data is declared twice: also directories[0].path"}},
		{"an endless module file", []string{"module", "define", "/dev/zero"}, exitRejected,
			[]string{"/dev/zero: larger than 1048576 bytes"}},
		{"a directory as a module file", []string{"module", "define", files}, exitRejected,
			[]string{files + ": a directory, not a module file"}},
		{"a node listed twice in a mesh file", []string{"up", "--modules", mods, "--mesh", meshTwice}, exitRejected,
			[]string{meshTwice + ": nodes[2].name: node \"a\" is listed twice: also nodes[0]"}},
		{"a short digest in a mesh file", []string{"up", "--modules", mods, "--mesh", meshDigest}, exitRejected,
			[]string{`refused (invalid): set-up: artifact forge/web: digest "sha256:ab12cd34"`, "nothing was written"}},
		{"a bad node in a mesh file writes none", []string{"up", "--modules", mods, "--mesh", meshBadNode}, exitRejected,
			[]string{`node name "B"`, "nothing was written"}},
		{"an endless mesh file", []string{"up", "--modules", mods, "--mesh", "/dev/zero"}, exitRejected,
			[]string{"/dev/zero: larger than 1048576 bytes"}},
		{"a scenario file with no scenario", []string{"scenario", "run", emptyFeature}, exitFailed, []string{"no scenario ran: the files hold none"}},
		{"a directory with no feature file", []string{"scenario", "run", noFeatures}, exitFailed, []string{"no scenario ran"}},
		{"no scenario matches the tags", []string{"scenario", "run", "--tags", "@nothing", "../../features/03_holds.feature"}, exitFailed,
			[]string{`no scenario ran: none matches --tags "@nothing"`}},
		{"a feature line over 64 KiB", []string{"scenario", "run", longLine}, exitFailed, []string{longLine + ":3: a line longer than 64 KiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(readAll(t, dir))
			args := tc.args
			if args[0] != "scenario" {
				args = append(args, "--data", dir)
			}
			code, out, errOut := mesh(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %.2000q does not contain %q", errOut, want)
				}
			}
			if len(errOut) > 4000 {
				t.Errorf("stderr is %d bytes: the input is not shortened", len(errOut))
			}
			if after := len(readAll(t, dir)); after != before {
				t.Errorf("a refused command wrote %d event(s)", after-before)
			}
			if args[0] == "up" || args[0] == "scenario" {
				return // local only
			}
			// The same against a controller over the store.
			s := startServer(t, dir)
			defer s.stop()
			code, out, errOut = mesh(t, append(tc.args, s.flags()...)...)
			if code != tc.code {
				t.Fatalf("remote: exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("remote: stderr %.2000q does not contain %q", errOut, want)
				}
			}
			if after := countEvents(t, s.flags()); after != before {
				t.Errorf("remote: a refused command wrote %d event(s)", after-before)
			}
		})
	}
}

// Refused on a fresh data directory, a command leaves no store behind.
func TestRefusedOnAFreshDirectoryMakesNoStore(t *testing.T) {
	badMesh := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(badMesh, []byte("nodes:\n  - {name: a, modules: [ghost]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"node", "register", "a", "B"},
		{"node", "adopt", "a"},
		{"up", "--modules", "../../examples/modules", "--mesh", badMesh},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		code, out, errOut := mesh(t, append(args, "--data", dir)...)
		if code != exitRejected {
			t.Errorf("mesh %v: exit %d, want %d\n%s%s", args, code, exitRejected, out, errOut)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("mesh %v was refused but made %s (%v)", args, dir, err)
		}
	}
}

// A panic in any verb exits with a code of its own, its stack on stderr.
func TestPanicExitsWithItsOwnCode(t *testing.T) {
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut, now: wallClock}
	root := e.root()
	root.AddCommand(&cobra.Command{Use: "explode", RunE: func(*cobra.Command, []string) error {
		var cs []commands.Command
		_ = commands.Unchanged(cs[len(cs)]) // a runtime panic: index out of range
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
	vs := verbs(e.root())
	if len(vs) < 20 {
		t.Fatalf("%d verbs, want every one", len(vs))
	}
	for _, c := range vs {
		name := verbName(c)
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

func TestWriteVerbs(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	for _, m := range modes {
		if *update && m.name != "local" {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			flags, stop := m.start(t, dir)
			defer stop()
			testWriteVerbs(t, dir, flags)
		})
	}
}

func testWriteVerbs(t *testing.T, dir string, flags []string) {
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
		if code, out, errOut := mesh(t, append(args, flags...)...); code != exitOK {
			t.Fatalf("mesh %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	_, out, _ := mesh(t, append([]string{"timeline"}, flags...)...)
	// The CLI stamps events with the wall clock.
	out = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).ReplaceAllString(out, "TIME               ")
	golden(t, "write-verbs-timeline", out, dir)

	// Run again, every verb finds its work already done: it says so, exits
	// 0 and writes nothing.
	before := countEvents(t, flags)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"node", "register", "a", "b"}, "node a is already registered, nothing to do\nnode b is already registered, nothing to do\n"},
		{[]string{"node", "adopt", "a"}, "node a is already adopted, nothing to do\n"},
		{[]string{"node", "set", "a", "port.store", "6852"}, "node a already has port.store 6852, nothing to do\n"},
		{[]string{"module", "define", file}, "module web is already defined so, nothing to do\n"},
		{[]string{"release", "web", "a"}, "module web is not assigned to a, nothing to do\n"},
	} {
		code, out, errOut := mesh(t, append(tc.args, flags...)...)
		if code != exitOK || out != tc.says {
			t.Errorf("mesh %v again: exit %d\n%s%s\nwant exit 0 and %q", tc.args, code, out, errOut, tc.says)
		}
	}
	must := func(args ...string) {
		t.Helper()
		if code, out, errOut := mesh(t, append(args, flags...)...); code != exitOK {
			t.Fatalf("mesh %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	must("assign", "web", "a")
	must("take", "web", "a")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"assign", "web", "a"}, "module web is already assigned to a, nothing to do\n"},
		{[]string{"take", "web", "a"}, "module web is already taken on a, nothing to do\n"},
	} {
		code, out, errOut := mesh(t, append(tc.args, flags...)...)
		if code != exitOK || out != tc.says {
			t.Errorf("mesh %v again: exit %d\n%s%s\nwant exit 0 and %q", tc.args, code, out, errOut, tc.says)
		}
	}
	must("release", "web", "a")
	if after := countEvents(t, flags); after != before+3 {
		t.Fatalf("%d events after the re-runs, want the %d before and the assign, take and release", after, before)
	}
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

// mesh up writes to a user's store with the wall clock: a second run's
// events follow the first's, and every one is dated now, not at the
// simulator's epoch.
func TestUpUsesTheWallClock(t *testing.T) {
	dir := t.TempDir()
	var evs []events.Event
	for i := range 2 {
		var out, errOut bytes.Buffer
		args := []string{"up", "--data", dir, "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"}
		if code := run(context.Background(), args, &out, &errOut); code != exitOK {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, code, out.String(), errOut.String())
		}
		all := readAll(t, dir)
		if len(all) <= len(evs) {
			t.Fatalf("run %d appended nothing", i+1)
		}
		evs = all
	}
	now := time.Now()
	subMicro := false
	for i, ev := range evs {
		if d := now.Sub(ev.At); d < 0 || d > time.Minute {
			t.Errorf("#%d %s at %s: %s before now, want within a minute", ev.Position, ev.Type, ev.At, d)
		}
		if ev.At.Location() != time.UTC {
			t.Errorf("#%d %s at %s: not UTC", ev.Position, ev.Type, ev.At)
		}
		if i > 0 && ev.At.Before(evs[i-1].At) {
			t.Errorf("#%d %s at %s is before #%d at %s", ev.Position, ev.Type, ev.At, evs[i-1].Position, evs[i-1].At)
		}
		subMicro = subMicro || ev.At.Nanosecond()%1000 != 0
	}
	if !subMicro {
		t.Errorf("no event of %d has a time finer than a microsecond: nanoseconds are lost", len(evs))
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
