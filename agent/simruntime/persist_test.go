package simruntime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"meshplane/agent"
	"meshplane/agent/runtimetest"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// The conformance suite holds for a node kept in a file too.
func TestConformanceInAFile(t *testing.T) {
	runtimetest.Run(t, func(tb testing.TB) agent.Runtime {
		rt, err := simruntime.Open(filepath.Join(tb.TempDir(), "node.json"))
		if err != nil {
			tb.Fatal(err)
		}
		return rt
	})
}

// TestOpenRemembers: a node opened again from its file holds what the
// last one left: containers (running or stopped, with their specs and
// how often each was created), directories with their modes, files with
// their content; what the world outside did too.
func TestOpenRemembers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "node.json")
	rt, err := simruntime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Open made no file: %v", err)
	}
	spec := declaration.Container{Image: "i:1", Env: []string{"A=1"}, Mounts: []declaration.Mount{{Source: "/var/lib/x", Target: "/x"}}}
	for _, step := range []error{
		rt.Mkdir(ctx, "/var/lib/x", 0o750),
		rt.WriteFile(ctx, "/etc/x/app.ini", []byte("[server]\n"), 0o640),
		rt.CreateContainer(ctx, agent.Container{Name: "web", Module: "x", Digest: "sha256:01", Spec: spec}),
		rt.CreateContainer(ctx, agent.Container{Name: "worker", Module: "x", Digest: "sha256:02", Spec: spec}),
		rt.StopContainer("worker"),
		rt.RunUnmanaged("hand", "nginx"),
		rt.MakeDirectory("/srv/found", 0o700),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	again, err := simruntime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before, err := rt.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, err := again.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || len(before) != 2 {
		t.Fatalf("containers %+v, then %+v; want web and worker", before, after)
	}
	for i := range after {
		b, a := before[i], after[i]
		if a.Name != b.Name || a.Digest != b.Digest || a.Module != b.Module || a.Stopped != b.Stopped || len(a.Spec.Env) != 1 || a.Spec.Env[0] != "A=1" {
			t.Errorf("container %d: %+v, then %+v", i, b, a)
		}
	}
	if !again.Running("web") || again.Running("worker") || !again.Running("hand") {
		t.Errorf("running: web %v worker %v hand %v; want true false true", again.Running("web"), again.Running("worker"), again.Running("hand"))
	}
	if n := again.Creates("web"); n != 1 {
		t.Errorf("web created %d times, want 1", n)
	}
	if mode, ok := again.Dir("/var/lib/x"); !ok || mode != 0o750 {
		t.Errorf("/var/lib/x: %o %v", mode, ok)
	}
	if mode, ok := again.Dir("/srv/found"); !ok || mode != 0o700 {
		t.Errorf("/srv/found: %o %v", mode, ok)
	}
	if b, mode, ok := again.File("/etc/x/app.ini"); !ok || mode != 0o640 || string(b) != "[server]\n" {
		t.Errorf("/etc/x/app.ini: %q %o %v", b, mode, ok)
	}
	if rt.Paths() != again.Paths() {
		t.Errorf("paths:\n%s\nthen:\n%s", rt.Paths(), again.Paths())
	}
	// A change on the node opened again is kept in turn.
	if err := again.RemoveContainer(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	third, err := simruntime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := third.Container("web"); ok {
		t.Error("a removed container came back")
	}
}

// TestOpenRefusesADamagedFile: a file whose bytes changed, cut short, or
// of another version is ErrDamaged, and is left where it is.
func TestOpenRefusesADamagedFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	rt, err := simruntime.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Mkdir(context.Background(), "/var/lib/x", 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(b)
	flipped[bytes.Index(flipped, []byte("/var/lib/x"))+1] ^= 0x01
	for name, content := range map[string][]byte{
		"a flipped bit": flipped,
		"cut short":     b[:len(b)/2],
		"empty":         {},
		"another version": func() []byte {
			body := bytes.Replace(b[:bytes.LastIndex(b[:len(b)-1], []byte("\n"))+1], []byte(`"version": 1`), []byte(`"version": 9`), 1)
			return body // no valid checksum line for it either way
		}(),
	} {
		path := filepath.Join(dir, "damaged.json")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := simruntime.Open(path); !errors.Is(err, simruntime.ErrDamaged) {
			t.Errorf("%s: Open = %v, want ErrDamaged", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, content) {
			t.Errorf("%s: the damaged file was changed", name)
		}
	}
}
