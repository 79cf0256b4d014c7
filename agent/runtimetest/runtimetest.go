// Package runtimetest is the conformance suite of agent.Runtime: the one
// body of tests every runtime passes. agent/simruntime is the only runtime
// today; one over a real container engine, when written, passes it too.
//
// Use it from a test of the runtime's package:
//
//	func TestConformance(t *testing.T) {
//		runtimetest.Run(t, func(t testing.TB) agent.Runtime { return simruntime.New() })
//	}
//
// open is called once per subtest and must return a runtime with no managed
// containers, over a disk on which the suite's paths (under /srv/rtsuite) do
// not exist. A runtime on a real host maps those absolute paths under a
// temporary root and gives each call its own container-name namespace.
//
// A runtime that can also start a container the mesh does not manage
// implements Unmanaged; the suite then checks that such containers are never
// listed nor removed. A runtime that can stop a container as the world
// outside the mesh would implements Stopper; the suite then checks that a
// stopped container is listed Stopped and StartContainer runs it again.
//
// Every runtime is also an agent.Inspector; the state cases (state.go)
// check a running container's state, and, for a runtime whose world
// implements Crasher and HealthWorld, a crash loop and a failing health
// check.
//
// RunPaths runs the path part of the suite alone (no container is made).
// RunLinks is the symbolic-link part, for a runtime over a real filesystem
// that implements Linker: a link at a path, or above it, is never
// followed, never described and never removed.
package runtimetest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"meshplane/agent"
	"meshplane/declaration"
)

// Unmanaged is implemented by runtimes that can run a container outside the
// mesh, for the suite to check it is left alone.
type Unmanaged interface {
	RunUnmanaged(name, image string) error
}

// Stopper is implemented by runtimes that can stop a container as something
// outside the mesh would (an operator, a crash), for the suite to check that
// it is listed stopped and started again.
type Stopper interface {
	StopContainer(name string) error
}

// Root is the directory under which the suite makes every path.
const Root = "/srv/rtsuite"

func spec(image string) declaration.Container {
	return declaration.Container{
		Image:   image,
		Command: []string{"serve", "--port", "8080"},
		Env:     []string{"A=1", "B=two words", "EMPTY="},
		Mounts: []declaration.Mount{
			{Source: Root + "/data", Target: "/data"},
			{Source: Root + "/conf", Target: "/etc/app", ReadOnly: true},
			{Source: "cache", Target: "/cache", Volume: true},
		},
		Networks: []string{"mesh", "private"},
	}
}

func managed(name, module, image string) agent.Container {
	s := spec(image)
	return agent.Container{Name: name, Module: module, Digest: declaration.Digest(s), Spec: s}
}

// mounts makes the host paths spec mounts.
func mounts(t testing.TB, ctx context.Context, rt agent.Runtime) {
	t.Helper()
	for _, p := range []string{Root + "/data", Root + "/conf"} {
		if err := rt.Mkdir(ctx, p, 0o755); err != nil {
			t.Fatalf("mkdir %s: %v", p, err)
		}
	}
}

// Run runs the suite against the runtimes open makes.
func Run(t *testing.T, open func(t testing.TB) agent.Runtime) {
	run(t, open, append(append(containerTests, stateTests...), pathTests...))
}

// RunPaths runs the part of the suite that touches only paths (Stat,
// Mkdir, Chmod, WriteFile, ReadFile), for a runtime that resolves paths in
// more than one way to run under each without an engine.
func RunPaths(t *testing.T, open func(t testing.TB) agent.Runtime) {
	run(t, open, pathTests)
}

type suiteTest struct {
	name string
	fn   func(t *testing.T, rt agent.Runtime)
}

var containerTests = []suiteTest{
	{"CreateListRoundTrip", testCreateList},
	{"CreateMinimalSpec", testCreateMinimal},
	{"CreateExisting", testCreateExisting},
	{"CreateInvalid", testCreateInvalid},
	{"Remove", testRemove},
	{"RemoveMissing", testRemoveMissing},
	{"Unmanaged", testUnmanaged},
	{"StoppedAndStarted", testStopped},
	{"StartMissing", testStartMissing},
}

var pathTests = []suiteTest{
	{"Directories", testDirectories},
	{"MkdirExisting", testMkdirExisting},
	{"ChmodMissing", testChmodMissing},
	{"Files", testFiles},
	{"FileKinds", testFileKinds},
	{"BadPathsAndModes", testBadInput},
	{"ContextCancelled", testCancelled},
}

func run(t *testing.T, open func(t testing.TB) agent.Runtime, tests []suiteTest) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

func testCreateList(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	mounts(t, ctx, rt)
	want := []agent.Container{
		managed("web", "forge", "registry:5000/forge/web@sha256:ab12"),
		managed("ca", "route-proxy", "step-ca:0.27"),
	}
	for _, c := range want {
		if err := rt.CreateContainer(ctx, c); err != nil {
			t.Fatalf("create %s: %v", c.Name, err)
		}
	}
	got, err := rt.ListContainers(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	want[0], want[1] = want[1], want[0] // sorted by name, and running
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("list:\n got %+v\nwant %+v", got, want)
	}
	for _, c := range got {
		if declaration.Digest(c.Spec) != c.Digest {
			t.Errorf("%s: listed spec digests to %s, created with %s", c.Name, declaration.Digest(c.Spec), c.Digest)
		}
	}
}

func testCreateMinimal(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	c := agent.Container{Name: "min", Module: "m", Spec: declaration.Container{Image: "busybox:1"}}
	c.Digest = declaration.Digest(c.Spec)
	if err := rt.CreateContainer(ctx, c); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := rt.ListContainers(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(got) != 1 || declaration.Digest(got[0].Spec) != c.Digest || got[0].Module != "m" || got[0].Digest != c.Digest {
		t.Fatalf("list = %+v, want exactly %+v", got, c)
	}
}

func testCreateExisting(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	mounts(t, ctx, rt)
	c := managed("web", "forge", "img:1")
	if err := rt.CreateContainer(ctx, c); err != nil {
		t.Fatalf("create: %v", err)
	}
	other := managed("web", "forge", "img:2")
	if err := rt.CreateContainer(ctx, other); !errors.Is(err, agent.ErrExists) {
		t.Fatalf("second create of web: %v, want ErrExists", err)
	}
	got, err := rt.ListContainers(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(got) != 1 || got[0].Spec.Image != "img:1" {
		t.Fatalf("after refused create: %+v, want only web on img:1", got)
	}
}

func testCreateInvalid(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	mounts(t, ctx, rt)
	bad := []struct {
		name string
		c    agent.Container
	}{
		{"empty name", managed("", "m", "img")},
		{"name with slash", managed("a/b", "m", "img")},
		{"name with space", managed("a b", "m", "img")},
		{"empty image", agent.Container{Name: "x", Module: "m", Spec: declaration.Container{}}},
		{"relative mount", agent.Container{Name: "x", Module: "m", Spec: declaration.Container{
			Image: "img", Mounts: []declaration.Mount{{Source: "data", Target: "/data"}}}}},
		{"env without =", agent.Container{Name: "x", Module: "m", Spec: declaration.Container{
			Image: "img", Env: []string{"NOEQUALS"}}}},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			if err := rt.CreateContainer(ctx, b.c); !errors.Is(err, agent.ErrInvalid) {
				t.Fatalf("create: %v, want ErrInvalid", err)
			}
		})
	}
	got, err := rt.ListContainers(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("refused creates left %+v", got)
	}
}

func testRemove(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	mounts(t, ctx, rt)
	for _, n := range []string{"a", "b", "c"} {
		if err := rt.CreateContainer(ctx, managed(n, "m", "img")); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	if err := rt.RemoveContainer(ctx, "b"); err != nil {
		t.Fatalf("remove b: %v", err)
	}
	got, err := rt.ListContainers(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "c"}) {
		t.Fatalf("after removing b: %v, want [a c]", names)
	}
	// A removed name can be created again, with another spec.
	if err := rt.CreateContainer(ctx, managed("b", "m", "img:2")); err != nil {
		t.Fatalf("re-create b: %v", err)
	}
}

func testRemoveMissing(t *testing.T, rt agent.Runtime) {
	if err := rt.RemoveContainer(context.Background(), "ghost"); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("remove ghost: %v, want ErrNotFound", err)
	}
}

func testStopped(t *testing.T, rt agent.Runtime) {
	s, ok := rt.(Stopper)
	if !ok {
		t.Skip("runtime cannot stop a container from outside")
	}
	ctx := context.Background()
	mounts(t, ctx, rt)
	for _, n := range []string{"a", "b"} {
		if err := rt.CreateContainer(ctx, managed(n, "m", "img:1")); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	if err := s.StopContainer("b"); err != nil {
		t.Fatalf("stop b from outside: %v", err)
	}
	stopped := func(want map[string]bool) {
		t.Helper()
		got, err := rt.ListContainers(ctx)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		have := map[string]bool{}
		for _, c := range got {
			have[c.Name] = c.Stopped
		}
		if !reflect.DeepEqual(have, want) {
			t.Fatalf("listed stopped = %v, want %v", have, want)
		}
	}
	stopped(map[string]bool{"a": false, "b": true})
	for _, n := range []string{"b", "a"} { // a stopped one, then a running one: no change
		if err := rt.StartContainer(ctx, n); err != nil {
			t.Fatalf("start %s: %v", n, err)
		}
	}
	stopped(map[string]bool{"a": false, "b": false})
}

func testStartMissing(t *testing.T, rt agent.Runtime) {
	if err := rt.StartContainer(context.Background(), "ghost"); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("start ghost: %v, want ErrNotFound", err)
	}
}

func testUnmanaged(t *testing.T, rt agent.Runtime) {
	u, ok := rt.(Unmanaged)
	if !ok {
		t.Skip("runtime cannot run unmanaged containers")
	}
	ctx := context.Background()
	if err := u.RunUnmanaged("by-hand", "nginx:1"); err != nil {
		t.Fatalf("run unmanaged: %v", err)
	}
	got, err := rt.ListContainers(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("list shows unmanaged containers: %+v", got)
	}
	if err := rt.RemoveContainer(ctx, "by-hand"); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("remove of an unmanaged container: %v, want ErrNotFound", err)
	}
	if err := rt.StartContainer(ctx, "by-hand"); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("start of an unmanaged container: %v, want ErrNotFound", err)
	}
	if err := rt.CreateContainer(ctx, managed("by-hand", "m", "img")); !errors.Is(err, agent.ErrExists) {
		t.Fatalf("create over an unmanaged container: %v, want ErrExists", err)
	}
}

func testDirectories(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	p := Root + "/a/b/c"
	info, err := rt.Stat(ctx, p)
	if err != nil {
		t.Fatalf("stat of a missing path: %v (absence is a result, not an error)", err)
	}
	if info.Exists {
		t.Fatalf("stat %s before mkdir: %+v", p, info)
	}
	for _, mode := range []uint32{0o700, 0o755, 0o2770} {
		t.Run("", func(t *testing.T) {
			dir := p + "/" + modeName(mode)
			if err := rt.Mkdir(ctx, dir, mode); err != nil {
				t.Fatalf("mkdir %s %o: %v", dir, mode, err)
			}
			checkDir(t, rt, dir, mode)
			checkDir(t, rt, p, 0o755) // missing parents at 0755
			if err := rt.Chmod(ctx, dir, 0o750); err != nil {
				t.Fatalf("chmod: %v", err)
			}
			checkDir(t, rt, dir, 0o750)
		})
	}
}

func modeName(mode uint32) string {
	const digits = "01234567"
	var b []byte
	for i := 3; i >= 0; i-- {
		b = append(b, digits[(mode>>(3*uint(i)))&7])
	}
	return "m" + string(b)
}

func checkDir(t *testing.T, rt agent.Runtime, p string, mode uint32) {
	t.Helper()
	info, err := rt.Stat(context.Background(), p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	if !info.Exists || !info.Dir || info.Mode != mode {
		t.Fatalf("stat %s = %+v, want a directory at %o", p, info, mode)
	}
}

func testMkdirExisting(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	p := Root + "/d"
	if err := rt.Mkdir(ctx, p, 0o700); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	if err := rt.Mkdir(ctx, p, 0o755); !errors.Is(err, agent.ErrExists) {
		t.Fatalf("second mkdir: %v, want ErrExists", err)
	}
	checkDir(t, rt, p, 0o700)
	f := Root + "/f"
	if err := rt.WriteFile(ctx, f, []byte("x"), 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := rt.Mkdir(ctx, f, 0o755); !errors.Is(err, agent.ErrExists) {
		t.Fatalf("mkdir over a file: %v, want ErrExists", err)
	}
	if err := rt.Mkdir(ctx, f+"/under", 0o755); !errors.Is(err, agent.ErrWrongKind) {
		t.Fatalf("mkdir under a file: %v, want ErrWrongKind", err)
	}
}

func testChmodMissing(t *testing.T, rt agent.Runtime) {
	if err := rt.Chmod(context.Background(), Root+"/nothing", 0o700); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("chmod of nothing: %v, want ErrNotFound", err)
	}
}

func testFiles(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	cases := []struct {
		name    string
		content []byte
		mode    uint32
	}{
		{"empty", []byte{}, 0o644},
		{"text", []byte("10.1.0.3 searxng.zurag.be\n"), 0o644},
		{"binary", []byte{0, 1, 2, 0xff, '\n', '\r', 0}, 0o600},
		{"no trailing newline", []byte("last line"), 0o640},
		{"large", bytes.Repeat([]byte("0123456789abcdef"), 4096), 0o444},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Root + "/files/" + modeName(uint32(i))
			if err := rt.WriteFile(ctx, p, c.content, c.mode); err != nil {
				t.Fatalf("write: %v", err)
			}
			checkFile(t, rt, p, c.content, c.mode)
			// Overwrite with other content and mode: replaced whole.
			next := append([]byte("v2:"), c.content[:len(c.content)/2]...)
			if err := rt.WriteFile(ctx, p, next, 0o600); err != nil {
				t.Fatalf("rewrite: %v", err)
			}
			checkFile(t, rt, p, next, 0o600)
		})
	}
}

func checkFile(t *testing.T, rt agent.Runtime, p string, content []byte, mode uint32) {
	t.Helper()
	ctx := context.Background()
	info, err := rt.Stat(ctx, p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	if !info.Exists || info.Dir || info.Mode != mode || info.Size != int64(len(content)) {
		t.Fatalf("stat %s = %+v, want a file of %d bytes at %o", p, info, len(content), mode)
	}
	got, err := rt.ReadFile(ctx, p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	if !bytes.Equal(got, content) {
		t.Fatalf("read %s = %q, want %q", p, got, content)
	}
}

func testFileKinds(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	d := Root + "/dir"
	if err := rt.Mkdir(ctx, d, 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	if err := rt.WriteFile(ctx, d, []byte("x"), 0o644); !errors.Is(err, agent.ErrWrongKind) {
		t.Fatalf("write over a directory: %v, want ErrWrongKind", err)
	}
	checkDir(t, rt, d, 0o755)
	if _, err := rt.ReadFile(ctx, d); !errors.Is(err, agent.ErrWrongKind) {
		t.Fatalf("read of a directory: %v, want ErrWrongKind", err)
	}
	if _, err := rt.ReadFile(ctx, Root+"/none"); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("read of nothing: %v, want ErrNotFound", err)
	}
	f := Root + "/f"
	if err := rt.WriteFile(ctx, f, []byte("x"), 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := rt.WriteFile(ctx, f+"/under", []byte("x"), 0o644); !errors.Is(err, agent.ErrWrongKind) {
		t.Fatalf("write under a file: %v, want ErrWrongKind", err)
	}
	if err := rt.Chmod(ctx, f, 0o600); err != nil {
		t.Fatalf("chmod file: %v", err)
	}
	checkFile(t, rt, f, []byte("x"), 0o600)
}

func testBadInput(t *testing.T, rt agent.Runtime) {
	ctx := context.Background()
	for _, p := range []string{"", "relative/path", Root + "/../escape", Root + "/trailing/", Root + "//double", "/nul\x00"} {
		t.Run(p, func(t *testing.T) {
			if _, err := rt.Stat(ctx, p); !errors.Is(err, agent.ErrInvalid) {
				t.Errorf("stat %q: %v, want ErrInvalid", p, err)
			}
			if err := rt.Mkdir(ctx, p, 0o755); !errors.Is(err, agent.ErrInvalid) {
				t.Errorf("mkdir %q: %v, want ErrInvalid", p, err)
			}
			if err := rt.WriteFile(ctx, p, nil, 0o644); !errors.Is(err, agent.ErrInvalid) {
				t.Errorf("write %q: %v, want ErrInvalid", p, err)
			}
			if _, err := rt.ReadFile(ctx, p); !errors.Is(err, agent.ErrInvalid) {
				t.Errorf("read %q: %v, want ErrInvalid", p, err)
			}
			if err := rt.Chmod(ctx, p, 0o755); !errors.Is(err, agent.ErrInvalid) {
				t.Errorf("chmod %q: %v, want ErrInvalid", p, err)
			}
		})
	}
	p := Root + "/modes"
	if err := rt.Mkdir(ctx, p, 0o10000); !errors.Is(err, agent.ErrInvalid) {
		t.Errorf("mkdir with mode 10000: %v, want ErrInvalid", err)
	}
	if info, err := rt.Stat(ctx, p); err != nil || info.Exists {
		t.Errorf("refused mkdir left %+v (%v)", info, err)
	}
	if err := rt.WriteFile(ctx, p, nil, 0o20000); !errors.Is(err, agent.ErrInvalid) {
		t.Errorf("write with mode 20000: %v, want ErrInvalid", err)
	}
	if info, err := rt.Stat(ctx, p); err != nil || info.Exists {
		t.Errorf("refused write left %+v (%v)", info, err)
	}
}

func testCancelled(t *testing.T, rt agent.Runtime) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := Root + "/cancelled"
	c := agent.Container{Name: "cancelled", Module: "m", Spec: declaration.Container{Image: "img"}}
	calls := []struct {
		name string
		fn   func() error
	}{
		{"list", func() error { _, err := rt.ListContainers(ctx); return err }},
		{"create", func() error { return rt.CreateContainer(ctx, c) }},
		{"remove", func() error { return rt.RemoveContainer(ctx, "cancelled") }},
		{"start", func() error { return rt.StartContainer(ctx, "cancelled") }},
		{"stat", func() error { _, err := rt.Stat(ctx, p); return err }},
		{"mkdir", func() error { return rt.Mkdir(ctx, p, 0o755) }},
		{"chmod", func() error { return rt.Chmod(ctx, p, 0o755) }},
		{"write", func() error { return rt.WriteFile(ctx, p, []byte("x"), 0o644) }},
		{"read", func() error { _, err := rt.ReadFile(ctx, p); return err }},
	}
	for _, call := range calls {
		if err := call.fn(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", call.name, err)
		}
	}
	bg := context.Background()
	if got, err := rt.ListContainers(bg); err != nil || len(got) != 0 {
		t.Errorf("cancelled calls left containers %+v (%v)", got, err)
	}
	if info, err := rt.Stat(bg, p); err != nil || info.Exists {
		t.Errorf("cancelled calls left %s: %+v (%v)", p, info, err)
	}
}

// Linker is a runtime over a real filesystem that can also put a symbolic
// link at a path, as a container that writes to a mounted directory can,
// for RunLinks.
type Linker interface {
	agent.Runtime
	// Symlink puts a symbolic link to target (verbatim) at p, a path as the
	// runtime names it; p's parent exists.
	Symlink(target, p string) error
	// Readlink returns the target of the symbolic link at p, or an error if
	// no link is there.
	Readlink(p string) (string, error)
}

// RunLinks runs the suite's symbolic-link part against the runtimes open
// makes: every runtime over a real filesystem passes it (see agent.Runtime:
// a link is never followed, never described, never removed). A runtime in
// memory, which has no links, does not run it.
func RunLinks(t *testing.T, open func(t testing.TB) Linker) {
	cases := []struct {
		name   string
		target string
		// parent: the link is the path's parent, not the path.
		parent bool
	}{
		{"to a file", Root + "/inside/f", false},
		{"to a directory", Root + "/inside/d", false},
		{"dangling", Root + "/nothing-here", false},
		{"relative", "../inside/f", false},
		{"as the parent", Root + "/inside/d", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := open(t)
			ctx := context.Background()
			// What the links point at: following one would change it.
			for _, f := range []string{Root + "/inside/f", Root + "/inside/d/f"} {
				if err := rt.WriteFile(ctx, f, []byte("inside\n"), 0o644); err != nil {
					t.Fatalf("write %s: %v", f, err)
				}
			}
			if err := rt.Mkdir(ctx, Root+"/l", 0o755); err != nil {
				t.Fatalf("mkdir: %v", err)
			}
			link := Root + "/l/x"
			if err := rt.Symlink(c.target, link); err != nil {
				t.Fatalf("symlink: %v", err)
			}
			p := link
			if c.parent {
				p = link + "/f" // inside/d/f exists: following would find it
			}
			if info, err := rt.Stat(ctx, p); err != nil || info.Exists {
				t.Errorf("stat %s through a link: %+v (%v), want nothing there and no error", p, info, err)
			}
			calls := []struct {
				name string
				err  error
			}{
				{"mkdir", rt.Mkdir(ctx, p, 0o700)},
				{"chmod", rt.Chmod(ctx, p, 0o600)},
				{"write", rt.WriteFile(ctx, p, []byte("through the link\n"), 0o600)},
				{"read", func() error { _, err := rt.ReadFile(ctx, p); return err }()},
			}
			for _, call := range calls {
				if !errors.Is(call.err, agent.ErrSymlink) {
					t.Errorf("%s %s through a link: %v, want ErrSymlink", call.name, p, call.err)
				} else if !strings.Contains(call.err.Error(), link+" is ") {
					t.Errorf("%s %s: %q does not name the link %s", call.name, p, call.err, link)
				}
			}
			if got, err := rt.Readlink(link); err != nil || got != c.target {
				t.Errorf("the link is now %q (%v), want it left pointing at %q", got, err, c.target)
			}
			checkFile(t, rt, Root+"/inside/f", []byte("inside\n"), 0o644)
			checkFile(t, rt, Root+"/inside/d/f", []byte("inside\n"), 0o644)
			checkDir(t, rt, Root+"/inside/d", 0o755)
			if info, err := rt.Stat(ctx, Root+"/nothing-here"); err != nil || info.Exists {
				t.Errorf("a dangling link's target was made: %+v (%v)", info, err)
			}
		})
	}
}
