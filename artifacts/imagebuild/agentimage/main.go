// Command agentimage writes the agent image (imagebuild.Agent: the mesh
// binary, static, running `mesh agent`) as a docker-save tarball, which
// `docker load -i FILE` reads:
//
//	go tool task image:agent     # ./bin/mesh-agent-image.tar
//	go run ./artifacts/imagebuild/agentimage -o FILE [-tag NAME:TAG] [-arch GOARCH]
//
// Run it from the module's checkout (the mesh binary is built there).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/artifacts/imagebuild"
	"meshplane/internal/atomicfile"
)

func main() {
	out := flag.String("o", "bin/mesh-agent-image.tar", "write the tarball to this `file`")
	tag := flag.String("tag", imagebuild.AgentTag, "the image's `name:tag` in the tarball")
	arch := flag.String("arch", "", "the image's `GOARCH` (default this machine's)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "agentimage: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := write(ctx, *out, *tag, *arch); err != nil {
		fmt.Fprintf(os.Stderr, "agentimage: %v\n", err)
		os.Exit(1)
	}
}

func write(ctx context.Context, out, tag, arch string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %w", tag, err)
	}
	img, err := imagebuild.Agent(ctx, imagebuild.Options{GOARCH: arch})
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(out, 0o644, func(w io.Writer) error { return tarball.Write(ref, img, w) }); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s (%s)\nload it with: docker load -i %s\n", out, ref, digest, out)
	return nil
}
