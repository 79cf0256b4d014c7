package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/agent"
	"meshplane/agent/runtimetest"
	"meshplane/artifacts"
)

// pushHealthImage pushes img with a HEALTHCHECK that reads /data/healthy
// every half second (one failure is unhealthy), and returns its reference
// by digest.
func pushHealthImage(ctx context.Context, addr, dir string, img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg := cf.Config
	cfg.Healthcheck = &v1.HealthConfig{
		Test:     []string{"CMD", "/mesh-demo", "cat", "/data/healthy"},
		Interval: 500 * time.Millisecond, Timeout: 2 * time.Second, Retries: 1,
	}
	himg, err := mutate.Config(img, cfg)
	if err != nil {
		return "", err
	}
	tarPath := filepath.Join(dir, "meshtest-health.tar")
	tag, _ := name.NewTag("meshtest-health:build")
	if err := tarball.WriteToFile(tarPath, tag, himg); err != nil {
		return "", err
	}
	digest, err := artifacts.Push(ctx, addr, "forge/meshtest-health", tarPath)
	if err != nil {
		return "", err
	}
	return addr + "/forge/meshtest-health@" + digest, nil
}

// ExitAtStart implements runtimetest.Crasher: the container is made again
// with the test program's `cat /no/such/file` for its command (exit 1, at
// every start), under the engine's restart policy.
func (r rt) ExitAtStart(name string, code int, log string) error {
	if code != 1 || log != runtimetest.CrashLog {
		return fmt.Errorf("the test image exits only with 1, printing %q", runtimetest.CrashLog)
	}
	ctx := context.Background()
	cs, err := r.ListContainers(ctx)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Name != name {
			continue
		}
		if err := r.RemoveContainer(ctx, name); err != nil {
			return err
		}
		c.Spec.Command = []string{"cat", "/no/such/file"}
		return r.CreateContainer(ctx, agent.Container{Name: c.Name, Module: c.Module, Digest: c.Digest, Spec: c.Spec})
	}
	return fmt.Errorf("exit at start %s: %w", name, agent.ErrNotFound)
}

// healthFile is the file the health image's check reads, on the host.
func (r rt) healthFile() string {
	return filepath.Join(r.root, strings.TrimPrefix(runtimetest.Root, "/"), "data", "healthy")
}

// Healthy implements runtimetest.HealthWorld: the file the check reads is
// there.
func (r rt) Healthy(string) error { return os.WriteFile(r.healthFile(), []byte("ok\n"), 0o644) }

// Unhealthy implements runtimetest.HealthWorld: the file the check reads
// is gone (the probe prints runtimetest.HealthOutput).
func (r rt) Unhealthy(_, output string) error {
	if output != runtimetest.HealthOutput {
		return fmt.Errorf("the health image's probe prints only %q", runtimetest.HealthOutput)
	}
	if err := os.Remove(r.healthFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
