package meshup

// The builds of a mesh file (builds:): the images up makes of the
// project's Go programs, recorded by the set-up, and put into the artifact
// store the agent of the node holding it serves on this machine, before
// any declaration naming them is pushed.

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"meshplane/agent"
	"meshplane/artifacts"
	"meshplane/artifacts/imagebuild"
	"meshplane/commands"
)

// Bounds of what up waits for on this machine, for its builds.
const (
	// buildTimeout bounds building every image of a mesh file (a cold Go
	// build cache compiles the standard library for a static program).
	buildTimeout = 10 * time.Minute
	// storeTimeout bounds waiting for the artifact store its agent serves
	// and pushing the built images to it.
	storeTimeout = 2 * time.Minute
)

// Build is one build of a mesh file's builds:, made by BuildImages.
type Build struct {
	Module, Name, Program string
	// Digest is the image's digest, which the set-up records.
	Digest string
	// Image is the image built, which StageBuilds and PushBuilds put in
	// the artifact store.
	Image v1.Image
}

// BuildImages builds every image mf's builds: name (one compile per
// program), in the current directory's Go module, and says so to w. Each
// carries the data directory's id (agent.LabelData = dataID).
func BuildImages(ctx context.Context, mf File, dataID string, w io.Writer) ([]Build, error) {
	if len(mf.Builds) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	byProgram := map[string]v1.Image{}
	var out []Build
	for _, b := range mf.Builds {
		img, ok := byProgram[b.Program]
		if !ok {
			start := time.Now()
			var err error
			opt := imagebuild.Options{Labels: map[string]string{agent.LabelData: dataID}}
			if img, err = imagebuild.Program(ctx, b.Program, opt); err != nil {
				return nil, fmt.Errorf("build %s of module %s: %w", b.Name, b.Module, err)
			}
			byProgram[b.Program] = img
			fmt.Fprintf(w, "built %s (static, linux/%s) in %.1f s\n", b.Program, imageArch(img), time.Since(start).Seconds())
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("build %s of module %s: %w", b.Name, b.Module, err)
		}
		out = append(out, Build{Module: b.Module, Name: b.Name, Program: b.Program, Digest: d.String(), Image: img})
	}
	return out, nil
}

func imageArch(img v1.Image) string {
	if cf, err := img.ConfigFile(); err == nil {
		return cf.Architecture
	}
	return "?"
}

// RecordBuilds are the set-up's commands recording builds (SetUp's
// builds).
func RecordBuilds(builds []Build) []commands.RecordArtifact {
	var cs []commands.RecordArtifact
	for _, b := range builds {
		cs = append(cs, commands.RecordArtifact{Module: b.Module, Name: b.Name, Digest: b.Digest})
	}
	return cs
}

// StageBuilds puts every build into the files of the artifact store in dir
// before its agent starts, through the store's own registry served for the
// moment on a loopback port of its own. The controller pushes declarations
// as soon as it leads, so an agent may apply before up could push anything
// to the store it serves: staged, the images are there from its first
// request, and no first apply finds one missing.
func StageBuilds(ctx context.Context, dir string, builds []Build) (err error) {
	if len(builds) == 0 {
		return nil
	}
	h, err := artifacts.NewHandler(dir)
	if err != nil {
		return fmt.Errorf("stage the builds: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stage the builds: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- artifacts.ServeOn(sctx, ln, h) }()
	defer func() {
		cancel()
		if serr := <-served; serr != nil && err == nil {
			err = fmt.Errorf("stage the builds: %w", serr)
		}
	}()
	if err := putBuilds(ctx, ln.Addr().String(), builds, nil); err != nil {
		return fmt.Errorf("stage the builds: %w", err)
	}
	return nil
}

// putBuilds pushes every build to the artifact store at addr and checks the
// store holds it at the build's digest; done, if set, is told of each.
func putBuilds(ctx context.Context, addr string, builds []Build, done func(Build)) error {
	for _, b := range builds {
		digest, err := artifacts.PushImage(ctx, addr, b.Name, b.Image)
		if err != nil {
			return err
		}
		if digest != b.Digest {
			return fmt.Errorf("%s: the store holds %s, the build is %s", b.Name, digest, b.Digest)
		}
		if done != nil {
			done(b)
		}
	}
	return nil
}

// PushBuilds waits for the artifact store at addr (its agent is starting)
// and pushes every build to it by digest, so that the engine can pull what
// the declarations name before any is pushed; it says so of each to w.
func PushBuilds(ctx context.Context, addr string, builds []Build, w io.Writer) error {
	if len(builds) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := artifacts.Ready(ctx, addr); err != nil {
		return fmt.Errorf("push the builds: %w", err)
	}
	err := putBuilds(ctx, addr, builds, func(b Build) {
		fmt.Fprintf(w, "pushed %s to the artifact store at %s: %s@%s\n", b.Name, addr, b.Name, b.Digest)
	})
	if err != nil {
		return fmt.Errorf("push the builds: %w", err)
	}
	return nil
}
