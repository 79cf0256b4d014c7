// Package testimage builds the Docker runtime's test image in Go: the
// meshtest program compiled static (CGO_ENABLED=0) as the one file of a
// one-layer image whose entrypoint it is. No registry outside this machine
// is needed; the tests push the image to an artifact store on loopback and
// the engine pulls it from there (the engine trusts 127.0.0.0/8 registries
// over plain HTTP by default).
package testimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Program is the package path of the program inside the image.
const Program = "meshplane/agent/docker/internal/meshtest"

var (
	once sync.Once
	img  v1.Image
	err  error
)

// Image returns the test image, built once per process. Its entrypoint is
// /meshtest: with any arguments it runs until stopped; "cat FILE" prints FILE.
func Image() (v1.Image, error) {
	once.Do(func() { img, err = build() })
	return img, err
}

func build() (v1.Image, error) {
	dir, err := os.MkdirTemp("", "meshtest-")
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "meshtest")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, Program)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testimage: go build %s: %w\n%s", Program, err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "meshtest", Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return nil, fmt.Errorf("testimage: layer: %w", err)
	}
	im, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	cf, err := im.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{"/meshtest"}
	if im, err = mutate.ConfigFile(im, cf); err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	return im, nil
}
