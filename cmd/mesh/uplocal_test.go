package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"go.yaml.in/yaml/v3"

	"meshplane/agent"
	"meshplane/api"
	"meshplane/artifacts/imagebuild"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
	"meshplane/meshup"
	"meshplane/projections"
)

// localExample writes the README's example mesh (examples/local/mesh.yaml)
// for one test: its local node renamed node (engine names and labels are
// then the test's own) and its artifact store on a free port. It returns
// the file and the store's address.
func localExample(t *testing.T, node string) (path, storeAt string) {
	t.Helper()
	mf, err := meshup.ReadFile("../../examples/local/mesh.yaml")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := range mf.Nodes {
		n := &mf.Nodes[i]
		if n.Runtime != meshup.RuntimeDocker {
			continue
		}
		if n.ArtifactStore == 0 || n.PrivateAddress != "127.0.0.1" {
			t.Fatalf("the example's local node %s: artifact store %d at %q, want it held on loopback", n.Name, n.ArtifactStore, n.PrivateAddress)
		}
		found = true
		n.Name = node
		n.ArtifactStore = freeport.Port(t)
		storeAt = "127.0.0.1:" + strconv.Itoa(n.ArtifactStore)
	}
	if !found {
		t.Fatal("examples/local/mesh.yaml has no node with runtime: docker")
	}
	b, err := yaml.Marshal(mf)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, storeAt
}

// upLocal runs `mesh up --once` on the example with the mesh file path.
func upLocal(t *testing.T, env []string, data, path string) (int, string, string) {
	t.Helper()
	return meshtest.CLI(t, env, "up", "--once", "--data", data, "--listen", "127.0.0.1:0", "--bus-listen", "127.0.0.1:0",
		"--modules", "../../examples/local/modules", "--mesh", path)
}

// TestProcessUpOnceDocker: the README's first command with an engine
// reachable: `mesh up --once` on the example builds cmd/mesh-demo's image,
// the local node's agent serves the artifact store and pulls it from there,
// and the node runs a real container of it, labelled for the node and
// serving its page; `mesh status` shows the node converged. Run again, it
// finds everything done. Without an engine the test fails under CI=true,
// and elsewhere skips, loudly.
func TestProcessUpOnceDocker(t *testing.T) {
	meshtest.NeedEngine(t)
	eng, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	node := meshtest.RandomNodeName(t)
	path, storeAt := localExample(t, node)
	byNode := filters.NewArgs(filters.Arg("label", agent.LabelNode+"="+node))
	t.Cleanup(func() { meshtest.RemoveNode(t, eng, byNode, storeAt) })
	data := t.TempDir()

	var last string
	for _, run := range []string{"first", "again"} {
		code, out, errOut := upLocal(t, nil, data, path)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", run, code, out, errOut)
		}
		last = out
		for _, want := range []string{
			"Docker engine reachable: node " + node + " on it",
			"agent " + node + " ", "runtime docker",
			"pushed hello/web to the artifact store at " + storeAt,
			// --once prints right after the pass: its containers have run
			// less than min_healthy (10 s), so they are starting.
			fmt.Sprintf("%-8s sync in-sync    health starting", node),
			"docker ps --filter label=" + agent.LabelNode + "=" + node,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output does not say %q:\n%s", run, want, out)
			}
		}
		if strings.Contains(out, "no Docker engine") {
			t.Errorf("%s: says no engine with one reachable:\n%s", run, out)
		}
	}

	var st []api.NodeStatus
	if err := json.Unmarshal([]byte(meshtest.MustCLI(t, nil, "status", "-o", "json", "--data", data, node)), &st); err != nil {
		t.Fatal(err)
	}
	// What --once left recorded: its agent ended before min_healthy was
	// up, so the container is starting, never converged.
	if len(st) != 1 || st[0].Health != projections.HealthStarting || st[0].Sync != projections.SyncInSync {
		t.Fatalf("mesh status %s: %+v, want in sync and starting", node, st)
	}

	// The engine runs one container for the node: the module's, of the image
	// the project built, pulled by digest from the node's artifact store.
	cs, err := eng.ContainerList(context.Background(), container.ListOptions{All: true, Filters: byNode})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("%d containers labelled for %s, want 1: %+v", len(cs), node, cs)
	}
	c := cs[0]
	in, err := eng.ContainerInspect(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	id, err := os.ReadFile(filepath.Join(data, meshup.DataIDFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "/" + node + "-" + string(id[:6]) + "-hello-web"; !in.State.Running || in.Name != want {
		t.Errorf("container %s: running %v, want %s running (the node's and the data directory's names)", in.Name, in.State.Running, want)
	}
	if want := storeAt + "/hello/web@sha256:"; !strings.HasPrefix(in.Config.Image, want) {
		t.Errorf("container image %q, want one pulled from %s", in.Config.Image, want)
	}
	if in.Config.Labels[agent.LabelManaged] != "true" || in.Config.Labels[agent.LabelModule] != "hello" ||
		in.Config.Labels[imagebuild.LabelProgram] != "meshplane/cmd/mesh-demo" {
		t.Errorf("container labels %v: want the mesh's and the build's", in.Config.Labels)
	}
	// It serves its page: the module's greeting and the mesh's roster.
	var ip string
	for _, n := range in.NetworkSettings.Networks {
		ip = n.IPAddress
	}
	if ip == "" {
		t.Fatalf("container %s has no address", in.Name)
	}
	testwait.Eventually(t, 20*time.Second, func() error {
		cl := http.Client{Timeout: 2 * time.Second}
		resp, err := cl.Get("http://" + ip + ":8080/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, want := range []string{"hello from the mesh", "127.0.0.1\thello.local.mesh"} {
			if !strings.Contains(string(b), want) {
				return fmt.Errorf("page does not say %q:\n%s", want, b)
			}
		}
		return nil
	})
	// The module's file is on the host, under the agent's root.
	b, err := os.ReadFile(filepath.Join(data, meshup.AgentsDir, node, meshup.DockerRootDir, "etc/hello/hello.conf"))
	if err != nil || !strings.Contains(string(b), "greeting") {
		t.Errorf("the module's file under the node's root: %q, %v", b, err)
	}
	// What up made carries the data directory's id; its clean-up removes
	// that and nothing of another data directory's.
	checkCleanup(t, eng, node, data, last)
}

// TestProcessUpOnceNoEngine: with no engine where DOCKER_HOST points, `mesh
// up --once` on the example says so in one line, runs the local node on the
// simulated runtime, and every node converges.
func TestProcessUpOnceNoEngine(t *testing.T) {
	node := meshtest.RandomNodeName(t)
	path, _ := localExample(t, node)
	dead := "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
	code, out, errOut := upLocal(t, []string{"DOCKER_HOST=" + dead}, t.TempDir(), path)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	want := "no Docker engine reachable at " + dead + ": cannot connect: node " + node + " on the simulated runtime instead\n"
	if n := strings.Count(out, "no Docker engine"); n != 1 || !strings.Contains(out, want) {
		t.Errorf("output says no engine %d times, want once, as %q:\n%s", n, want, out)
	}
	for _, want := range []string{
		fmt.Sprintf("agent %-8s pid", node),
		fmt.Sprintf("%-8s sync in-sync    health starting", node), // run less than min_healthy
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, fmt.Sprintf("agent %-8s pid", node)) && !strings.Contains(line, "runtime sim") {
			t.Errorf("the local node's agent: %q, want runtime sim", line)
		}
	}
	for _, unwanted := range []string{"runtime docker", "pushed ", "docker ps"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output says %q with no engine:\n%s", unwanted, out)
		}
	}
}
