package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/events"
)

func FuzzParseMeshFile(f *testing.F) {
	example, err := os.ReadFile("../../examples/mesh.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	local, err := os.ReadFile("../../examples/local/mesh.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(local)
	f.Add([]byte("nodes:\n  - {name: a, runtime: podman}\nbuilds:\n  - {module: m, name: m/w}\n"))
	f.Add([]byte("nodes:\n  - {name: a}\n  - {name: a}\n"))
	f.Add([]byte("nodes:\n  - {name: a, found: [/srv//x/.]}\n"))
	f.Add([]byte("nodes: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMeshFile("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, errMeshFile) {
				t.Fatalf("error not marked errMeshFile: %v", err)
			}
			return
		}
		// Whatever it accepts holds each node once, and only clean
		// absolute found paths.
		seen := map[string]bool{}
		for _, n := range m.Nodes {
			if seen[n.Name] {
				t.Fatalf("accepted node %q twice", n.Name)
			}
			seen[n.Name] = true
			for _, d := range n.Found {
				if !filepath.IsAbs(d) || filepath.Clean(d) != d {
					t.Fatalf("accepted found path %q", d)
				}
			}
			if n.Runtime != "" && n.Runtime != runtimeSim && n.Runtime != runtimeDocker {
				t.Fatalf("accepted runtime %q", n.Runtime)
			}
		}
		for _, b := range m.Builds {
			if b.Program == "" {
				t.Fatalf("accepted a build of no program: %+v", b)
			}
		}
		// And only names by the one rule.
		for _, n := range m.Nodes {
			for _, mod := range append(append([]string{}, n.Modules...), n.Take...) {
				if events.CheckName("module", mod) != nil {
					t.Fatalf("accepted module %q", mod)
				}
			}
			if events.CheckName("node", n.Name) != nil {
				t.Fatalf("accepted node %q", n.Name)
			}
		}
	})
}

// TestParseMeshFileNames: every name of a mesh file is held to the one
// rule (events.CheckName), naming the field and the rule broken.
func TestParseMeshFileNames(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"x..y", "nodes:\n  - {name: x..y}\n", `m.yaml: nodes[0].name: node name "x..y": byte 1 is '.'`},
		{"a node with '_'", "nodes:\n  - {name: a}\n  - {name: web_a}\n", `nodes[1].name: node name "web_a": byte 3 is '_'`},
		{"an empty node name", "nodes:\n  - {runtime: sim}\n", `nodes[0].name: node name "": empty`},
		{"a module", "nodes:\n  - {name: a, modules: [forge, Forge]}\n", `nodes[0].modules[1]: module name "Forge": byte 0 is 'F'`},
		{"a take", "nodes:\n  - {name: a, modules: [forge], take: [forge.v2]}\n", `nodes[0].take[0]: module name "forge.v2"`},
		{"a port", "nodes:\n  - {name: a, ports: {store: 1, my_port: 2}}\n", `nodes[0].ports.my_port: port name "my_port"`},
		{"an artifact's module", "nodes: []\nartifacts:\n  - {module: Bad Name/../x, name: x/w, digest: d}\n", `artifacts[0].module: module name "Bad Name/../x"`},
		{"an artifact's name", "nodes: []\nartifacts:\n  - {module: m, name: m/../w, digest: d}\n", `artifacts[0].name: artifact name "m/../w": segment ".."`},
		{"a build's name", "nodes: []\nbuilds:\n  - {module: m, name: m/W, program: p}\n", `builds[0].name: artifact name "m/W": segment "W"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseMeshFile("m.yaml", []byte(tc.yaml))
			if !errors.Is(err, errMeshFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want errMeshFile saying %q", err, tc.want)
			}
		})
	}
}

// A mesh file naming a node x..y is refused before anything is written:
// exit 3, and no store in the data directory.
func TestUpRefusesABadNameBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mesh.yaml")
	if err := os.WriteFile(file, []byte("nodes:\n  - {name: x..y, modules: [forge]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out, errOut := mesh(t, "up", "--data", data, "--passes", "1", "--modules", "../../examples/modules", "--mesh", file)
	if code != exitRejected || !strings.Contains(errOut, `nodes[0].name: node name "x..y": byte 1 is '.'`) {
		t.Fatalf("exit %d, want 3 naming the rule\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(data, "events.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused mesh file left a store behind (%v)", err)
	}
}

// Running up again over the same data appends no operator events, and the
// simulated nodes' fresh runtimes are no churn loop.
func TestUpAgain(t *testing.T) {
	dir := upExample(t)
	code, out, errOut := mesh(t, "up", "--data", dir, "--passes", "2", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
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

// mesh up writes to a user's store with the wall clock: a second run's
// events follow the first's, and every one is dated now, not at the
// simulator's epoch.
func TestUpUsesTheWallClock(t *testing.T) {
	dir := t.TempDir()
	var evs []events.Event
	for i := range 2 {
		var out, errOut bytes.Buffer
		args := []string{"up", "--data", dir, "--passes", "2", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"}
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
