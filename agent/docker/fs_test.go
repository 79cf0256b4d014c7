package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/agent/runtimetest"
	"meshplane/declaration"
	"meshplane/events"
)

// The host-path tests need no engine: the runtime's files and directories
// are on this machine, under a temporary root, and the engine is a stub
// that has no containers.

// noEngine has no containers; a call the test does not expect fails.
type noEngine struct{ docker.Engine }

func (noEngine) ContainerList(context.Context, container.ListOptions) ([]container.Summary, error) {
	return nil, nil
}

func (noEngine) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{}, cerrdefs.ErrNotFound
}

func (noEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{}, errors.New("no engine in this test")
}

// pathRT is a Runtime over a stub engine and the host directory root, able
// to put links in it (runtimetest.Linker).
type pathRT struct {
	*docker.Runtime
	root string
}

func newPathRT(t testing.TB, root string) pathRT {
	t.Helper()
	r, err := docker.New(docker.Options{Node: "n1", Engine: noEngine{}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return pathRT{Runtime: r, root: root}
}

func (r pathRT) Symlink(target, p string) error { return os.Symlink(target, r.at(p)) }

func (r pathRT) Readlink(p string) (string, error) { return os.Readlink(r.at(p)) }

func (r pathRT) at(p string) string { return filepath.Join(r.root, filepath.FromSlash(p)) }

// resolvers runs fn once per way the runtime resolves host paths.
func resolvers(t *testing.T, fn func(t *testing.T)) {
	for _, how := range []string{"openat2", "walk"} {
		t.Run(how, func(t *testing.T) {
			if !docker.Resolve(t, how) && how == "openat2" {
				t.Log("NOTE: this kernel has no openat2 (or a filter refuses it): the walk runs in its place")
			}
			fn(t)
		})
	}
}

// TestPathConformance runs the suite's path part and its link part under
// each resolver.
func TestPathConformance(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		runtimetest.RunPaths(t, func(t testing.TB) agent.Runtime { return newPathRT(t, t.TempDir()) })
		runtimetest.RunLinks(t, func(t testing.TB) runtimetest.Linker { return newPathRT(t, t.TempDir()) })
	})
}

// snapshot is everything under dir, never following a link: each entry's
// type and mode, modification time, and content or link target.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d", fi.Mode(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" %q", b)
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// aged sets the modification time of everything under dir (deepest first,
// so a parent's is not moved by its children's) to a fixed time long ago:
// a write through a link, or a file made beside one, moves it.
func aged(t testing.TB, dir string) {
	t.Helper()
	var all []string
	if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		all = append(all, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, p := range slices.Backward(all) {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// sameTree fails t if dir differs from its snapshot before.
func sameTree(t testing.TB, what string, before map[string]string, dir string) {
	t.Helper()
	after := snapshot(t, dir)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s touched: %s was %s, is %q", what, p, v, after[p])
		}
	}
	for p, v := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s touched: %s made (%s)", what, p, v)
		}
	}
}

// mustWrite makes the file p with content and mode.
func mustWrite(t testing.TB, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// failedWith returns the report's error for the resource name.
func failedWith(o events.ApplyReported, name string) (string, bool) {
	for _, f := range o.Failed {
		if f.Name == name {
			return f.Error, true
		}
	}
	return "", false
}

// TestLinksAreNeverFollowed (issue 17, item 5): an agent applies a
// declared file, a declared directory and the hosts file under a root;
// then each is replaced by a symbolic link (to a file outside the root,
// to a directory outside, in a parent directory, to a file inside the
// root, pointing nowhere) and the agent applies again, as root. Nothing
// outside the root, nor the link's target inside it, is touched (content,
// mode, modification time, no file made); the link is left in place; the
// resource is reported failed, saying it is a symbolic link and naming it;
// every other resource is applied.
func TestLinksAreNeverFollowed(t *testing.T) {
	kinds := []struct {
		name     string
		path     string // the declared path
		resource string // the name the report gives its failure
		decl     func(v int) []declaration.Resource
		hosts    func(v int) string
	}{
		{
			name: "file", path: "/srv/app/app.ini", resource: "conf",
			decl: func(v int) []declaration.Resource {
				return []declaration.Resource{fileRes("conf", "m", "/srv/app/app.ini", fmt.Sprintf("port = %d\n", 3000+v), 0o640)}
			},
		},
		{
			name: "directory", path: "/srv/app/cache", resource: "cache",
			decl: func(v int) []declaration.Resource {
				return []declaration.Resource{dirRes("cache", "m", "/srv/app/cache", 0o700)}
			},
		},
		{
			name: "hosts file", path: declaration.HostsPath, resource: declaration.HostsPath,
			decl:  func(int) []declaration.Resource { return nil },
			hosts: func(v int) string { return fmt.Sprintf("10.1.0.%d\tweb.mesh\n", v) },
		},
	}
	links := []struct {
		name string
		// target is where the link points, given the root and the
		// directory outside it; parent: the link replaces the path's
		// parent directory instead of the path.
		target func(root, outside string) string
		parent bool
	}{
		{"to a file outside", func(_, out string) string { return filepath.Join(out, "shadow") }, false},
		{"to a directory outside", func(_, out string) string { return filepath.Join(out, "etc") }, false},
		{"in a parent directory", func(_, out string) string { return filepath.Join(out, "etc") }, true},
		{"to a file inside the root", func(root, _ string) string { return filepath.Join(root, "inside", "f") }, false},
		{"to a directory inside the root", func(root, _ string) string { return filepath.Join(root, "inside", "d") }, false},
		{"dangling", func(_, out string) string { return filepath.Join(out, "missing") }, false},
	}
	resolvers(t, func(t *testing.T) {
		for _, k := range kinds {
			for _, l := range links {
				t.Run(k.name+"/"+l.name, func(t *testing.T) {
					root, outside := t.TempDir(), t.TempDir()
					r := newPathRT(t, root)
					ag := newAgent(t, r, "n1")
					// What a link points at: /etc/shadow, a directory of
					// the host, and in it what the declared names would
					// find there.
					mustWrite(t, filepath.Join(outside, "shadow"), "root:$6$secret:19000:0:99999:7:::\n", 0o640)
					mustWrite(t, filepath.Join(outside, "etc", "app.ini"), "outside\n", 0o600)
					mustWrite(t, filepath.Join(outside, "etc", "hosts"), "127.0.0.1 localhost\n", 0o644)
					mustWrite(t, filepath.Join(outside, "etc", "cache", "keep"), "outside\n", 0o600)
					mustWrite(t, filepath.Join(root, "inside", "f"), "inside\n", 0o644)
					mustWrite(t, filepath.Join(root, "inside", "d", "keep"), "inside\n", 0o644)

					d := func(v int) declaration.Declaration {
						rs := append(k.decl(v), fileRes("ok", "m", "/srv/ok.ini", fmt.Sprintf("ok %d\n", v), 0o644))
						hosts := hosts1
						if k.hosts != nil {
							hosts = k.hosts(v)
						}
						return decl("n1", fmt.Sprint(v), hosts, rs...)
					}
					if o := apply(t, ag, d(1)); len(o.Failed) != 0 {
						t.Fatalf("first apply: %+v", o)
					}

					// The swap, as a container writing to a mounted
					// directory would do it.
					link := k.path
					if l.parent {
						link = path.Dir(k.path)
					}
					target := l.target(root, outside)
					if err := os.RemoveAll(r.at(link)); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(target, r.at(link)); err != nil {
						t.Fatal(err)
					}
					aged(t, outside)
					aged(t, filepath.Join(root, "inside"))
					out, in := snapshot(t, outside), snapshot(t, filepath.Join(root, "inside"))

					o := apply(t, ag, d(2))
					msg, failed := failedWith(o, k.resource)
					if !failed {
						t.Fatalf("%s not reported failed: %+v", k.resource, o)
					}
					if !strings.Contains(msg, "symbolic link") || !strings.Contains(msg, link+" is ") {
						t.Errorf("%s failed with %q: want it to say that %s is a symbolic link", k.resource, msg, link)
					}
					if _, bad := failedWith(o, "ok"); bad || len(o.Failed) != 1 {
						t.Errorf("failed %+v: want only %s failed", o.Failed, k.resource)
					}
					if b, err := os.ReadFile(r.at("/srv/ok.ini")); err != nil || string(b) != "ok 2\n" {
						t.Errorf("the other resource: %q (%v), want it applied", b, err)
					}
					if err := errors.Join(o.CheckForm(), o.CheckCounts()); err != nil {
						t.Errorf("report: %v", err)
					}
					sameTree(t, "outside the root", out, outside)
					sameTree(t, "the link's target inside the root", in, filepath.Join(root, "inside"))
					if got, err := os.Readlink(r.at(link)); err != nil || got != target {
						t.Errorf("the link is now %q (%v), want it left to the operator, pointing at %q", got, err, target)
					}
				})
			}
		}
	})
}

// TestMountSourceLinkIsRefused: a bind-mount source that is a link, or
// under one, fails the container's create, naming the link, before the
// engine is asked: the engine would follow it and mount what it points at.
func TestMountSourceLinkIsRefused(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		for _, c := range []struct {
			name, source, link string
		}{
			{"the source", "/srv/data", "/srv/data"},
			{"a parent", "/srv/data/sub", "/srv/data"},
		} {
			t.Run(c.name, func(t *testing.T) {
				root, outside := t.TempDir(), t.TempDir()
				r := newPathRT(t, root)
				mustWrite(t, filepath.Join(outside, "sub", "keep"), "outside\n", 0o600)
				if err := os.MkdirAll(r.at("/srv"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, r.at(c.link)); err != nil {
					t.Fatal(err)
				}
				spec := declaration.Container{Image: "img", Mounts: []declaration.Mount{{Source: c.source, Target: "/data"}}}
				err := r.CreateContainer(context.Background(), agent.Container{Name: "web", Module: "m", Spec: spec})
				if !errors.Is(err, agent.ErrSymlink) || !strings.Contains(err.Error(), c.link+" is ") {
					t.Fatalf("create with a mount source through a link: %v, want ErrSymlink naming %s", err, c.link)
				}
			})
		}
	})
}

// TestNotAFileIsNeverOpened: a named pipe where a declared file is (which
// a read would block on for ever) is not described, read or written, and
// the calls say what it is.
func TestNotAFileIsNeverOpened(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		r := newPathRT(t, root)
		ctx := context.Background()
		if err := os.MkdirAll(r.at("/srv"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(r.at("/srv/pipe"), 0o644); err != nil {
			t.Fatal(err)
		}
		if info, err := r.Stat(ctx, "/srv/pipe"); err != nil || info.Exists {
			t.Errorf("stat of a pipe: %+v (%v), want nothing usable there", info, err)
		}
		if _, err := r.ReadFile(ctx, "/srv/pipe"); !errors.Is(err, agent.ErrWrongKind) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("read of a pipe: %v, want ErrWrongKind saying it is a named pipe", err)
		}
		if err := r.WriteFile(ctx, "/srv/pipe", []byte("x"), 0o644); !errors.Is(err, agent.ErrWrongKind) {
			t.Errorf("write of a pipe: %v, want ErrWrongKind", err)
		}
		if err := r.Chmod(ctx, "/srv/pipe", 0o600); !errors.Is(err, agent.ErrWrongKind) {
			t.Errorf("chmod of a pipe: %v, want ErrWrongKind", err)
		}
		if err := r.Mkdir(ctx, "/srv/pipe", 0o755); !errors.Is(err, agent.ErrExists) {
			t.Errorf("mkdir over a pipe: %v, want ErrExists", err)
		}
		if fi, err := os.Lstat(r.at("/srv/pipe")); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 || fi.Mode().Perm() != 0o644 {
			t.Errorf("the pipe is now %v (%v)", fi.Mode(), err)
		}
	})
}

// TestWriteFileInPlaceOrWhole: a new file is written under a temporary
// name and renamed, leaving nothing beside it; an existing one is written
// in place (one inode), so a container that bind-mounts it reads the new
// content.
func TestWriteFileInPlaceOrWhole(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		r := newPathRT(t, root)
		ctx := context.Background()
		const p = "/etc/app/app.ini"
		if err := r.WriteFile(ctx, p, []byte("one\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		ino := inode(t, r.at(p))
		if err := r.WriteFile(ctx, p, []byte("two, longer\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := inode(t, r.at(p)); got != ino {
			t.Errorf("rewrite replaced the file (inode %d, then %d)", ino, got)
		}
		if b, err := os.ReadFile(r.at(p)); err != nil || string(b) != "two, longer\n" {
			t.Errorf("content %q (%v)", b, err)
		}
		if fi, err := os.Stat(r.at(p)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v (%v), want 0600", fi.Mode(), err)
		}
		ents, err := os.ReadDir(r.at("/etc/app"))
		if err != nil || len(ents) != 1 || ents[0].Name() != "app.ini" {
			t.Errorf("beside the file: %v (%v), want app.ini alone", ents, err)
		}
		for _, d := range []string{"/etc", "/etc/app"} {
			if fi, err := os.Stat(r.at(d)); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("parent %s: %v (%v), want made at 0755", d, fi.Mode(), err)
			}
		}
	})
}
