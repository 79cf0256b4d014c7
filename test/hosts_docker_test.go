package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/agent"
	"meshplane/artifacts"
	"meshplane/artifacts/imagebuild"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
	"meshplane/projections"
)

// TestHostsDockerRuntime: one host of the private link runs its agent
// with --runtime docker against the machine's engine (its Unix socket is
// reachable from inside a network namespace; the engine itself is the
// machine's). The image is cmd/mesh-demo, built in Go and pushed to an
// artifact store in the test's process, on loopback, where the engine
// pulls it by digest, as the agent/docker tests do. A module of one
// container is assigned to the node and pushed: the agent, joined with a
// token over TLS, applies it, the controller records its report (in sync,
// converged), and the engine runs the container, labelled for the node.
// Under CI=true a missing engine is a failure.
func TestHostsDockerRuntime(t *testing.T) {
	meshtest.NeedEngine(t)
	eng, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()

	// The image, at a store on the engine's loopback.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img, err := imagebuild.Program(ctx, "meshplane/cmd/mesh-demo", imagebuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storeDir := t.TempDir()
	h, err := artifacts.NewHandler(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	store := httptest.NewServer(h)
	defer store.Close()
	storeAt := strings.TrimPrefix(store.URL, "http://")
	tarPath := filepath.Join(t.TempDir(), "demo.tar")
	tag, _ := name.NewTag("meshtest:build")
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		t.Fatal(err)
	}
	digest, err := artifacts.Push(ctx, storeAt, "hosts/demo", tarPath)
	if err != nil {
		t.Fatal(err)
	}
	ref := storeAt + "/hosts/demo@" + digest

	node := meshtest.RandomNodeName(t)
	byNode := filters.NewArgs(filters.Arg("label", agent.LabelNode+"="+node))
	t.Cleanup(func() { meshtest.RemoveNode(t, eng, byNode, storeAt) })

	m := startHostsMesh(t, 1)
	host := m.net.Host(1)
	module := "d" + node
	spec := filepath.Join(t.TempDir(), module+".yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf("module: %s\ncontainers:\n  - {name: web, image: %q}\n", module, ref)), 0o644); err != nil {
		t.Fatal(err)
	}
	m.mustCLI(t, m.ctl, "module", "define", spec)
	data := t.TempDir()
	args, env := m.joinHost(t, host, node, data)
	args = append([]string{"agent", "--data", data, "--runtime", "docker", "--docker-root", t.TempDir(), "--interval", "10m"}, args...)
	a := host.Start(t, append([]string{"MESH_SERVER=", "MESH_TOKEN=", "MESH_DATA="}, env...), meshtest.Binary(t), args...)
	m.mustCLI(t, m.ctl, "assign", module, node)
	m.mustCLI(t, m.ctl, "push", node)
	testwait.Eventually(t, 2*time.Minute, func() error {
		if exited, err := a.Exited(); exited {
			t.Fatalf("the agent exited: %v\n%s", err, a.Output())
		}
		st := m.status(t, m.ctl, node)
		if st.Sync != projections.SyncInSync || st.Health != projections.HealthConverged {
			return fmt.Errorf("%s: sync %q, health %q, applied %+v", node, st.Sync, st.Health, st.Applied)
		}
		return nil
	})
	if !strings.Contains(a.Output(), "runtime docker") {
		t.Errorf("the agent does not say it runs the docker runtime:\n%s", a.Output())
	}

	cs, err := eng.ContainerList(context.Background(), container.ListOptions{All: true, Filters: byNode})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("%d containers labelled for %s, want 1: %+v", len(cs), node, cs)
	}
	in, err := eng.ContainerInspect(context.Background(), cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !in.State.Running || !strings.HasPrefix(in.Config.Image, storeAt+"/hosts/demo@sha256:") ||
		in.Config.Labels[agent.LabelModule] != module {
		t.Errorf("container %s: running %v, image %q, labels %v; want %s's, running, of %s", in.Name, in.State.Running, in.Config.Image, in.Config.Labels, module, ref)
	}
}
