package docker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/artifacts"
	"meshplane/artifacts/imagebuild"
	"meshplane/declaration"
)

var (
	swapOnce sync.Once
	swapRef  string
	swapErr  error
)

// swapImage returns the image of testdata/swaplink (a program that puts
// symbolic links where it is told), built in Go as the test image is and
// pushed to the same artifact store on loopback, once per test binary.
func swapImage(t testing.TB) string {
	t.Helper()
	setup(t)
	swapOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		img, err := imagebuild.Program(ctx, "./testdata/swaplink", imagebuild.Options{})
		if err != nil {
			swapErr = err
			return
		}
		tarPath := filepath.Join(storeDir, "swaplink.tar")
		tag, _ := name.NewTag("swaplink:build")
		if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
			swapErr = err
			return
		}
		addr := strings.TrimPrefix(store.URL, "http://")
		digest, err := artifacts.Push(ctx, addr, "forge/swaplink", tarPath)
		if err != nil {
			swapErr = fmt.Errorf("push the swaplink image: %w", err)
			return
		}
		swapRef = addr + "/forge/swaplink@" + digest
	})
	if swapErr != nil {
		t.Fatalf("the swaplink image: %v", swapErr)
	}
	return swapRef
}

// run runs cmd inside the running container name of r, as the image's
// user (root), and fails t unless it exits 0.
func (r rt) run(t testing.TB, name string, cmd ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ex, err := eng.ContainerExecCreate(ctx, r.prefix+name, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatalf("exec in %s: %v", name, err)
	}
	resp, err := eng.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec attach in %s: %v", name, err)
	}
	var out, errb bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &errb, resp.Reader)
	resp.Close()
	if err != nil {
		t.Fatalf("exec read in %s: %v", name, err)
	}
	in, err := eng.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		t.Fatalf("exec inspect in %s: %v", name, err)
	}
	if in.ExitCode != 0 {
		t.Fatalf("%v in %s: exit %d: %s%s", cmd, name, in.ExitCode, out.String(), errb.String())
	}
}

// TestContainerCannotRedirectTheAgent (issue 17, item 5), on the engine: a
// container mounts a declared directory and the hosts file's directory;
// from inside it, as root, a process replaces the declared file with a
// link to a file outside the root (standing for /etc/shadow), the declared
// directory with a link to a directory outside, and the hosts file with a
// link out. The agent applies again, as root: nothing outside the root is
// touched (content, mode, modification time, nothing made), the links are
// left in place, and the report names each resource failed as a symbolic
// link; the container itself is left running.
func TestContainerCannotRedirectTheAgent(t *testing.T) {
	r := newRT(t)
	ref := swapImage(t)
	ag := newAgent(t, r, r.node)

	outside := t.TempDir()
	shadow := filepath.Join(outside, "shadow")
	mustWrite(t, shadow, "root:$6$secret:19000:0:99999:7:::\n", 0o640)
	mustWrite(t, filepath.Join(outside, "etc", "keep"), "outside\n", 0o600)
	mustWrite(t, filepath.Join(outside, "hosts"), "127.0.0.1 localhost\n", 0o644)
	aged(t, outside)
	before := snapshot(t, outside)

	intruder := declaration.Container{
		Image:   ref,
		Command: []string{"serve"},
		Mounts: []declaration.Mount{
			{Source: "/srv/forge", Target: "/data"},
			{Source: path.Dir(declaration.HostsPath), Target: "/mesh"},
		},
	}
	// The agent makes directories in the order of their resource names: a
	// nested directory's name sorts after its parent's.
	d := func(v int) declaration.Declaration {
		return decl(r.node, fmt.Sprint(v), fmt.Sprintf("10.1.0.%d\tweb.mesh\n", v),
			ctrRes("intruder", "forge", intruder),
			dirRes("forge-data", "forge", "/srv/forge", 0o755),
			dirRes("forge-data-cache", "forge", "/srv/forge/cache", 0o700),
			fileRes("forge-conf", "forge", "/srv/forge/app.ini", fmt.Sprintf("port = %d\n", 3000+v), 0o640),
		)
	}
	if o := apply(t, ag, d(1)); len(o.Failed) != 0 || len(o.Created) != 4 {
		t.Fatalf("first apply: %+v", o)
	}
	id := r.inspect(t, "intruder").ID

	links := []struct{ resource, path, inside, target string }{
		{"forge-conf", "/srv/forge/app.ini", "/data/app.ini", shadow},
		{"forge-data-cache", "/srv/forge/cache", "/data/cache", filepath.Join(outside, "etc")},
		{declaration.HostsPath, declaration.HostsPath, "/mesh/" + path.Base(declaration.HostsPath), filepath.Join(outside, "hosts")},
	}
	for _, l := range links {
		r.run(t, "intruder", "/swaplink", "ln", l.target, l.inside)
		host := filepath.Join(r.root, l.path)
		if got, err := os.Readlink(host); err != nil || got != l.target {
			t.Fatalf("the container's link at %s: %q (%v), want it on the host pointing at %s", host, got, err, l.target)
		}
	}

	o := apply(t, ag, d(2))
	for _, l := range links {
		msg, failed := failedWith(o, l.resource)
		if !failed {
			t.Errorf("%s not reported failed: %+v", l.resource, o)
			continue
		}
		if !strings.Contains(msg, l.path+" is a symbolic link") {
			t.Errorf("%s failed with %q: want it to say that %s is a symbolic link", l.resource, msg, l.path)
		}
		if got, err := os.Readlink(filepath.Join(r.root, l.path)); err != nil || got != l.target {
			t.Errorf("the link at %s is now %q (%v), want it left to the operator", l.path, got, err)
		}
	}
	if len(o.Failed) != len(links) {
		t.Errorf("failed %+v: want exactly %d", o.Failed, len(links))
	}
	if err := errors.Join(o.CheckForm(), o.CheckCounts()); err != nil {
		t.Errorf("report: %v", err)
	}
	sameTree(t, "outside the root", before, outside)
	if in := r.inspect(t, "intruder"); in.ID != id || !in.State.Running {
		t.Errorf("the container was recreated or stopped (%s, running %v)", in.ID, in.State.Running)
	}
}
