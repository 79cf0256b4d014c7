package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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

// mesh node register x..y --creds f appended node.registered and then
// failed on the bus's name check; without --creds it registered a node
// every push to failed. The name is refused at the door now, naming the
// rule: nothing registered, no credentials written, no store made.
func TestNodeRegisterRefusesBadNames(t *testing.T) {
	dir := upExample(t)
	for _, tc := range []struct{ node, rule string }{
		{"x..y", `node name "x..y": byte 1 is '.'`},
		{"web_a", `node name "web_a": byte 3 is '_'`},
		{"web.a", `node name "web.a": byte 3 is '.'`},
		{"a-", `node name "a-": a '-' at the start or the end`},
	} {
		t.Run(tc.node, func(t *testing.T) {
			for _, withCreds := range []bool{true, false} {
				creds := filepath.Join(t.TempDir(), "n.creds")
				fresh := filepath.Join(t.TempDir(), "data")
				for _, data := range []string{dir, fresh} {
					before := 0
					if data == dir {
						before = len(readAll(t, dir))
					}
					args := []string{"node", "register", tc.node, "--data", data}
					if withCreds {
						args = append(args, "--creds", creds)
					}
					code, out, errOut := mesh(t, args...)
					if code != exitRejected || !strings.Contains(errOut, "refused (invalid): "+tc.rule) {
						t.Fatalf("mesh %v: exit %d, want 3 naming %q\n%s%s", args, code, tc.rule, out, errOut)
					}
					if _, err := os.Stat(creds); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("mesh %v wrote credentials (%v)", args, err)
					}
					if data == dir {
						if after := len(readAll(t, dir)); after != before {
							t.Errorf("mesh %v appended %d event(s)", args, after-before)
						}
					} else if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("mesh %v made %s (%v)", args, fresh, err)
					}
				}
			}
		})
	}
}
