package imagebuild

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	dockerimage "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// engine is the Docker engine the environment names. Under CI=true one
// that cannot be reached is a failure; elsewhere the test skips, saying so.
func engine(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err = c.Ping(ctx); err != nil {
			c.Close()
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the agent image test under CI: no Docker engine reachable: %v", err)
		}
		t.Skipf("SKIPPING the agent image's run on a Docker engine: none reachable: %v (run scripts/ensure-docker.sh as root)", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAgentImage builds the agent image, checks its entrypoint and
// command, loads it into the Docker engine as `docker load` would, and
// runs it with --help in place of its command: mesh agent's help. The
// container and the image are removed after.
func TestAgentImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	img, err := Agent(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/mesh", "agent"}) ||
		!slices.Equal(cf.Config.Cmd, []string{"--data", "/var/lib/mesh-agent", "--runtime", "docker"}) {
		t.Errorf("entrypoint %q, cmd %q; want [/mesh agent] and [--data /var/lib/mesh-agent --runtime docker]", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.OS != "linux" || cf.Config.Labels[LabelProgram] != AgentProgram || len(cf.Config.Volumes) != 0 {
		t.Errorf("os %q, labels %v, volumes %v; want linux, %s=%s, none", cf.OS, cf.Config.Labels, cf.Config.Volumes, LabelProgram, AgentProgram)
	}

	eng := engine(t)
	rb := make([]byte, 6)
	if _, err := rand.Read(rb); err != nil {
		t.Fatal(err)
	}
	tag := "meshplane-test-agent-" + hex.EncodeToString(rb) + ":test"
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(ref, img, &buf); err != nil {
		t.Fatal(err)
	}
	resp, err := eng.ImageLoad(ctx, &buf, client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Cleanup(func() {
		if _, err := eng.ImageRemove(context.Background(), tag, dockerimage.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove the image %s: %v", tag, err)
		}
	})

	c, err := eng.ContainerCreate(ctx, &container.Config{Image: tag, Cmd: []string{"--help"}, Labels: map[string]string{"meshplane.test": "agent-image"}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("remove the container: %v", err)
		}
	})
	waitC, errC := eng.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
	if err := eng.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	var code int64
	select {
	case w := <-waitC:
		code = w.StatusCode
	case err := <-errC:
		t.Fatal(err)
	}
	logs, err := eng.ContainerLogs(ctx, c.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errOut, logs); err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(out.String(), "run one node's agent") || !strings.Contains(out.String(), "--runtime") {
		t.Errorf("docker run IMAGE --help: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0 and mesh agent's help", code, out.String(), errOut.String())
	}
}
