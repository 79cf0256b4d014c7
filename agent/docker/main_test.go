package docker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/agent/runtimetest"
	"meshplane/artifacts"
	"meshplane/artifacts/imagebuild"
)

// The tests run against a real Docker engine. Under CI=true an engine that
// cannot be reached is a failure; elsewhere the tests skip, saying so.
// scripts/ensure-docker.sh (run by `task test`) installs and starts one.

var (
	setupOnce sync.Once
	setupErr  error
	eng       *client.Client
	store     *httptest.Server // the artifact store holding the test image
	storeDir  string
	testRef   string // the test image by digest, at the store
	healthRef string // the test image with a HEALTHCHECK, by digest
)

func TestMain(m *testing.M) {
	code := m.Run()
	if store != nil {
		store.Close()
		os.RemoveAll(storeDir)
	}
	os.Exit(code)
}

// setup reaches the engine and pushes the test image to an artifact store
// on loopback, once per test binary.
func setup(t testing.TB) {
	t.Helper()
	setupOnce.Do(func() {
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			setupErr = fmt.Errorf("docker client: %w", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Ping(ctx); err != nil {
			setupErr = fmt.Errorf("no Docker engine reachable: %w", err)
			return
		}
		eng = c
		// The test image: cmd/mesh-demo, built static in Go, as `mesh up`
		// builds the example's images.
		bctx, bcancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer bcancel()
		img, err := imagebuild.Program(bctx, "meshplane/cmd/mesh-demo", imagebuild.Options{})
		if err != nil {
			setupErr = err
			return
		}
		dir, err := os.MkdirTemp("", "meshtest-store-")
		if err != nil {
			setupErr = err
			return
		}
		storeDir = dir
		h, err := artifacts.NewHandler(dir)
		if err != nil {
			setupErr = err
			return
		}
		store = httptest.NewServer(h)
		addr := strings.TrimPrefix(store.URL, "http://")
		// As an operator would: a docker-save tarball, pushed with the
		// artifact store's own push, pulled by the engine by digest.
		tarPath := filepath.Join(dir, "meshtest.tar")
		tag, _ := name.NewTag("meshtest:build")
		if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
			setupErr = err
			return
		}
		pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer pcancel()
		digest, err := artifacts.Push(pctx, addr, "forge/meshtest", tarPath)
		if err != nil {
			setupErr = fmt.Errorf("push the test image: %w", err)
			return
		}
		ref := addr + "/forge/meshtest@" + digest
		testRef = ref
		// The same program with a HEALTHCHECK, as an image's own config
		// has one: healthy while /data/healthy can be read.
		href, err := pushHealthImage(pctx, addr, dir, img)
		if err != nil {
			setupErr = fmt.Errorf("push the health image: %w", err)
			return
		}
		healthRef = href
	})
	if setupErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker tests under CI: %v", setupErr)
		}
		t.Skipf("SKIPPING the Docker runtime tests: %v (run scripts/ensure-docker.sh as root)", setupErr)
	}
}

// rt is a Runtime over the real engine for one test, with its own node,
// name prefix and host root, and the outside world's powers for the
// conformance suite (runtimetest.Unmanaged, runtimetest.Stopper).
type rt struct {
	*docker.Runtime
	node, prefix, root string
	unmanaged          *[]string
}

func randomNode(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "t" + hex.EncodeToString(b)
}

type rtOption func(*docker.Options)

// anyImage runs the test image whatever the declared reference (the
// conformance suite names images no registry here has).
// The suite's runtimetest.HealthImage is the image with a health check.
func anyImage(o *docker.Options) {
	o.ResolveImage = func(ref string) string {
		if ref == runtimetest.HealthImage {
			return healthRef
		}
		return testRef
	}
}

func newRT(t testing.TB, opts ...rtOption) rt {
	t.Helper()
	setup(t)
	node := randomNode(t)
	return newRTFor(t, node, node+"-", t.TempDir(), eng, opts...)
}

func newRTFor(t testing.TB, node, prefix, root string, e docker.Engine, opts ...rtOption) rt {
	t.Helper()
	o := docker.Options{Node: node, Engine: e, Root: root, Prefix: prefix, StopTimeout: 2 * time.Second, PullTimeout: 30 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	r, err := docker.New(o)
	if err != nil {
		t.Fatal(err)
	}
	out := rt{Runtime: r, node: node, prefix: prefix, root: root, unmanaged: new([]string)}
	t.Cleanup(func() { cleanup(t, node, *out.unmanaged) })
	return out
}

// cleanup removes what a test's node left on the engine.
func cleanup(t testing.TB, node string, extra []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	byNode := filters.NewArgs(filters.Arg("label", agent.LabelNode+"="+node))
	cs, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: byNode})
	if err != nil {
		t.Logf("cleanup: list: %v", err)
	}
	for _, c := range cs {
		extra = append(extra, c.ID)
	}
	for _, id := range extra {
		if err := eng.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil && !strings.Contains(err.Error(), "No such container") {
			t.Logf("cleanup: remove %s: %v", id, err)
		}
	}
	nets, _ := eng.NetworkList(ctx, network.ListOptions{Filters: byNode})
	for _, n := range nets {
		_ = eng.NetworkRemove(ctx, n.ID)
	}
	vols, _ := eng.VolumeList(ctx, volume.ListOptions{Filters: byNode})
	for _, v := range vols.Volumes {
		_ = eng.VolumeRemove(ctx, v.Name, true)
	}
}

// RunUnmanaged implements runtimetest.Unmanaged: a container with no labels.
func (r rt) RunUnmanaged(name, _ string) error {
	ctx := context.Background()
	c, err := eng.ContainerCreate(ctx, &container.Config{Image: testRef}, nil, nil, nil, r.prefix+name)
	if err != nil {
		return err
	}
	*r.unmanaged = append(*r.unmanaged, c.ID)
	return eng.ContainerStart(ctx, c.ID, container.StartOptions{})
}

// StopContainer implements runtimetest.Stopper: docker stop, from outside.
func (r rt) StopContainer(name string) error {
	secs := 2
	return eng.ContainerStop(context.Background(), r.prefix+name, container.StopOptions{Timeout: &secs})
}

// inspect returns the engine's view of the container name of r.
func (r rt) inspect(t testing.TB, name string) container.InspectResponse {
	t.Helper()
	in, err := eng.ContainerInspect(context.Background(), r.prefix+name)
	if err != nil {
		t.Fatalf("inspect %s: %v", name, err)
	}
	return in
}

// exec runs the test program with args inside the running container name
// and returns what it printed.
func (r rt) exec(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ex, err := eng.ContainerExecCreate(ctx, r.prefix+name, container.ExecOptions{
		Cmd: append([]string{"/mesh-demo"}, args...), AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		t.Fatalf("exec in %s: %v", name, err)
	}
	resp, err := eng.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec attach in %s: %v", name, err)
	}
	defer resp.Close()
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, resp.Reader); err != nil {
		t.Fatalf("exec read in %s: %v", name, err)
	}
	if errb.Len() > 0 {
		t.Fatalf("exec %v in %s: %s", args, name, errb.String())
	}
	return out.String()
}
