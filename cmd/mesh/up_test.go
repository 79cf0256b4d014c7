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
	})
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
