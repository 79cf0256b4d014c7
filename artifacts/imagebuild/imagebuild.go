// Package imagebuild builds container images of the project's own programs
// in Go, with no Dockerfile, no engine and no registry: a Go main package is
// compiled static (CGO_ENABLED=0, GOOS=linux) and becomes the one file of a
// one-layer image whose entrypoint it is (go-containerregistry's mutate).
//
// `mesh up` builds the example's images this way (a mesh file's builds:)
// and pushes them to the artifact store; the Docker runtime's tests build
// their test image the same way. The program they use is cmd/mesh-demo.
//
// The agent image (Agent) is the mesh binary built so, with entrypoint
// ["/mesh", "agent"] and command ["--data", "/var/lib/mesh-agent",
// "--runtime", "docker"]; `go tool task image:agent` writes it as a
// docker-save tarball (./agentimage), and README "Run the agent in a
// container" says what to mount and what that gives it.
//
// # The image
//
//	/NAME             the program, mode 0755, owned by root (NAME: the package's last element)
//	config            os linux, architecture Options.GOARCH, entrypoint ["/NAME"],
//	                  labels {LabelProgram: the package path} and Options.Labels
//
// The layer's tar entry has a zero modification time, the config no
// creation time, and the binary no version-control stamp (-buildvcs=false),
// so one program built twice from one checkout by one toolchain, with the
// same labels, is one digest: recording the build again finds it recorded, and a change of its
// source is a new build. It is not built with -trimpath, which would
// recompile the whole standard library into a cold build cache (measured
// 59 s of CPU, BENCHMARKS.md): without it the standard library already
// compiled for the mesh binary is shared, and the digest depends on the
// checkout's directory as well.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// LabelProgram is the image label naming the Go package an image was built
// from. Containers inherit it: `docker ps --filter label=meshplane.program`.
const LabelProgram = "meshplane.program"

// ErrBuild means the program did not compile (or the Go toolchain is not
// there to compile it). The error carries the compiler's output.
var ErrBuild = errors.New("go build failed")

// Options configure a build. The zero value builds for this machine's
// architecture in the current directory's module.
type Options struct {
	// Dir is where `go build` runs: a directory of the module that holds
	// the package. Empty: the current directory.
	Dir string
	// GOARCH is the image's architecture; empty: this machine's
	// (runtime.GOARCH), which is the local engine's.
	GOARCH string
	// Go is the go command; empty: "go" from PATH.
	Go string
	// Labels are put in the image's config beside LabelProgram (which
	// they cannot replace), so they are part of its digest: `mesh up`
	// labels what it builds with its data directory's id
	// (agent.LabelData), and cleans up by it. Containers inherit them.
	Labels map[string]string
}

// Program builds the Go main package pkg (an import path, or a relative
// path from Options.Dir, as `go build` takes) into a one-layer image (see
// the package comment). ctx bounds the compile.
func Program(ctx context.Context, pkg string, opt Options) (v1.Image, error) {
	if pkg == "" {
		return nil, errors.New("imagebuild: no package to build")
	}
	arch := opt.GOARCH
	if arch == "" {
		arch = runtime.GOARCH
	}
	goCmd := opt.Go
	if goCmd == "" {
		goCmd = "go"
	}
	name := path.Base(filepath.ToSlash(pkg))
	if name == "." || name == "/" || name == "" {
		return nil, fmt.Errorf("imagebuild: %q names no program", pkg)
	}
	dir, err := os.MkdirTemp("", "imagebuild-")
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, goCmd, "build", "-buildmode=exe", "-buildvcs=false", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = opt.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("imagebuild: go build %s: %w: %v\n%s", pkg, ErrBuild, err, strings.TrimSpace(string(out)))
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	return image(name, pkg, arch, b, opt.Labels)
}

// image makes the one-layer image of the program bytes b.
func image(name, pkg, arch string, b []byte, labels map[string]string) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	im, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	cf, err := im.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Entrypoint = []string{"/" + name}
	cf.Config.Labels = map[string]string{}
	maps.Copy(cf.Config.Labels, labels)
	cf.Config.Labels[LabelProgram] = pkg
	if im, err = mutate.ConfigFile(im, cf); err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	return im, nil
}
