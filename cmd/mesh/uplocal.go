package main

// What `mesh up` does for the nodes of a mesh file that are this machine:
// the images it builds (a mesh file's builds:), the runtime each node's
// agent runs on (runtime: docker, when an engine answers), and the artifact
// store the agent of the node holding it serves on this machine, which up
// fills with those images before it pushes any declaration.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/artifacts"
	"meshplane/artifacts/imagebuild"
	"meshplane/commands"
)

// Bounds of what up waits for on this machine.
const (
	// buildTimeout bounds building every image of a mesh file (a cold Go
	// build cache compiles the standard library for a static program).
	buildTimeout = 10 * time.Minute
	// engineTimeout bounds the ping that says whether an engine answers.
	engineTimeout = 3 * time.Second
	// storeTimeout bounds waiting for the artifact store its agent serves
	// and pushing the built images to it.
	storeTimeout = 2 * time.Minute
)

// builtImage is one build of a mesh file's builds:, made by up.
type builtImage struct {
	Module, Name, Program string
	Digest                string
	img                   v1.Image
}

// buildImages builds every image mf's builds: name (one compile per
// program), in the current directory's Go module, and says so.
func (e *env) buildImages(ctx context.Context, mf meshFile) ([]builtImage, error) {
	if len(mf.Builds) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	byProgram := map[string]v1.Image{}
	var out []builtImage
	for _, b := range mf.Builds {
		img, ok := byProgram[b.Program]
		if !ok {
			start := time.Now()
			var err error
			if img, err = imagebuild.Program(ctx, b.Program, imagebuild.Options{}); err != nil {
				return nil, fmt.Errorf("build %s of module %s: %w", b.Name, b.Module, err)
			}
			byProgram[b.Program] = img
			fmt.Fprintf(e.stdout, "built %s (static, linux/%s) in %.1f s\n", b.Program, imageArch(img), time.Since(start).Seconds())
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("build %s of module %s: %w", b.Name, b.Module, err)
		}
		out = append(out, builtImage{Module: b.Module, Name: b.Name, Program: b.Program, Digest: d.String(), img: img})
	}
	return out, nil
}

func imageArch(img v1.Image) string {
	if cf, err := img.ConfigFile(); err == nil {
		return cf.Architecture
	}
	return "?"
}

// recordBuilds are the set-up's commands recording builds.
func recordBuilds(builds []builtImage) []commands.Command {
	var cs []commands.Command
	for _, b := range builds {
		cs = append(cs, commands.RecordArtifact{Module: b.Module, Name: b.Name, Digest: b.Digest})
	}
	return cs
}

// nodeRuntimes is the runtime each node of mf runs on: sim, but docker for a
// node that asks for it when the engine the environment names (DOCKER_HOST,
// else the default socket) answers. When none answers it says so, in one
// line, and those nodes are simulated.
func (e *env) nodeRuntimes(ctx context.Context, mf meshFile) map[string]string {
	rts := map[string]string{}
	var local []string
	for _, n := range mf.Nodes {
		rts[n.Name] = runtimeSim
		if n.Runtime == runtimeDocker {
			local = append(local, n.Name)
		}
	}
	if len(local) == 0 {
		return rts
	}
	pctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	if err := docker.Reachable(pctx); err != nil {
		// "no Docker engine reachable at HOST: why: node local on the
		// simulated runtime instead": one line.
		fmt.Fprintf(e.stdout, "%s: %s on the simulated runtime instead\n", strings.TrimPrefix(err.Error(), "docker: "), joinNodes(local))
		return rts
	}
	for _, n := range local {
		rts[n] = runtimeDocker
	}
	fmt.Fprintf(e.stdout, "Docker engine reachable: %s on it, running real containers\n", joinNodes(local))
	return rts
}

func joinNodes(ns []string) string {
	if len(ns) == 1 {
		return "node " + ns[0]
	}
	return "nodes " + strings.Join(ns, ", ")
}

// storeServed is where the agent of the node holding mf's artifact store
// serves it, when that node runs on this machine's engine: at its private
// address (else loopback) and its artifact-store port. "" when no such
// node: a simulated node serves nothing.
func storeServed(mf meshFile, rts map[string]string) (node, addr string) {
	for _, n := range mf.Nodes {
		if n.ArtifactStore == 0 || rts[n.Name] != runtimeDocker {
			continue
		}
		host := n.PrivateAddress
		if host == "" {
			host = "127.0.0.1"
		}
		return n.Name, net.JoinHostPort(host, strconv.Itoa(n.ArtifactStore))
	}
	return "", ""
}

// storeFree checks that nothing listens on addr yet, so that an agent that
// could not serve the artifact store there fails up at once, not after
// storeTimeout.
func storeFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the artifact store's address %s: %w (another mesh up running? change the node's artifact-store port in the mesh file)", addr, err)
	}
	return ln.Close()
}

// stageBuilds puts every build into the files of the artifact store in dir
// before its agent starts, through the store's own registry served for the
// moment on a loopback port of its own. The controller pushes declarations
// as soon as it leads, so an agent may apply before up could push anything
// to the store it serves: staged, the images are there from its first
// request, and no first apply finds one missing.
func stageBuilds(ctx context.Context, dir string, builds []builtImage) (err error) {
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
func putBuilds(ctx context.Context, addr string, builds []builtImage, done func(builtImage)) error {
	for _, b := range builds {
		digest, err := artifacts.PushImage(ctx, addr, b.Name, b.img)
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

// pushBuilds waits for the artifact store at addr (its agent is starting)
// and pushes every build to it by digest, so that the engine can pull what
// the declarations name before any is pushed.
func (e *env) pushBuilds(ctx context.Context, addr string, builds []builtImage) error {
	if len(builds) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := artifacts.Ready(ctx, addr); err != nil {
		return fmt.Errorf("push the builds: %w", err)
	}
	err := putBuilds(ctx, addr, builds, func(b builtImage) {
		fmt.Fprintf(e.stdout, "pushed %s to the artifact store at %s: %s@%s\n", b.Name, addr, b.Name, b.Digest)
	})
	if err != nil {
		return fmt.Errorf("push the builds: %w", err)
	}
	return nil
}

// dockerCleanup is how to see and remove what the nodes on the engine
// made there: every container, network and volume carries the node's label
// (agent.LabelNode), every image the project built imagebuild.LabelProgram.
func dockerCleanup(nodes []string) string {
	var s string
	for _, n := range nodes {
		f := "label=" + agent.LabelNode + "=" + n
		s += fmt.Sprintf("  docker ps --filter %[1]s    (node %[2]s's containers, left running)\n", f, n)
		s += fmt.Sprintf("  docker rm -f $(docker ps -aq --filter %[1]s); docker network prune -f --filter %[1]s    (remove them; its volumes, kept: docker volume ls --filter %[1]s)\n", f)
	}
	s += fmt.Sprintf("  docker image prune -af --filter label=%s    (then the images the project built)\n", imagebuild.LabelProgram)
	return s
}
