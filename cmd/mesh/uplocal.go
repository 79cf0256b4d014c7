package main

// What `mesh up` does for the nodes of a mesh file that are this machine:
// the images it builds (a mesh file's builds:), the runtime each node's
// agent runs on (runtime: docker, when an engine answers), and the artifact
// store the agent of the node holding it serves on this machine, which up
// fills with those images before it pushes any declaration.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/artifacts"
	"meshplane/artifacts/imagebuild"
	"meshplane/commands"
	"meshplane/meshup"
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

// dataIDFile, in a data directory, is its id: 16 hex digits, made by the
// first mesh up that sets a mesh up there and kept. It is the value of
// agent.LabelData on what up makes on an engine (the images it builds; its
// agents' containers, networks and volumes, through --docker-label), so
// that data directories sharing an engine each clean up only their own.
const dataIDFile = "data-id"

// dataID is data's id: the one DATA/data-id keeps, or a new one, which save
// writes there once the data directory is made (a set-up refused on a
// fresh directory leaves nothing behind). save keeps an id written
// meanwhile by another up, and returns it.
func dataID(data string) (id string, save func() (string, error), err error) {
	path := filepath.Join(data, dataIDFile)
	read := func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		id := strings.TrimSpace(string(b))
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			return "", fmt.Errorf("%s holds %.40q, not a data directory's id (16 hex digits): remove it and run up again (what carries the old id on an engine is then another data directory's)", path, id)
		}
		return id, nil
	}
	switch id, err := read(); {
	case err == nil:
		return id, func() (string, error) { return id, nil }, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", nil, err
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("data directory id: %w", err)
	}
	id = hex.EncodeToString(b)
	save = func() (string, error) {
		if err := os.MkdirAll(data, 0o755); err != nil {
			return "", fmt.Errorf("data directory id: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return read()
		} else if err != nil {
			return "", fmt.Errorf("data directory id: %w", err)
		}
		_, werr := f.WriteString(id + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", fmt.Errorf("data directory id: %w", werr)
		}
		return id, nil
	}
	return id, save, nil
}

// buildImages builds every image mf's builds: name (one compile per
// program), in the current directory's Go module, and says so. Each
// carries the data directory's id (agent.LabelData = dataID).
func (e *env) buildImages(ctx context.Context, mf meshup.File, dataID string) ([]builtImage, error) {
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
			opt := imagebuild.Options{Labels: map[string]string{agent.LabelData: dataID}}
			if img, err = imagebuild.Program(ctx, b.Program, opt); err != nil {
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
func recordBuilds(builds []builtImage) []commands.RecordArtifact {
	var cs []commands.RecordArtifact
	for _, b := range builds {
		cs = append(cs, commands.RecordArtifact{Module: b.Module, Name: b.Name, Digest: b.Digest})
	}
	return cs
}

// nodeRuntimes is the runtime each node of mf runs on: sim, but docker for a
// node that asks for it when the engine the environment names (DOCKER_HOST,
// else the default socket) answers. When none answers it says so, in one
// line, and those nodes are simulated.
func (e *env) nodeRuntimes(ctx context.Context, mf meshup.File) map[string]string {
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
func storeServed(mf meshup.File, rts map[string]string) (node, addr string) {
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
// made there for the data directory whose id is dataID, and nothing else on
// a shared engine: every container, network and volume carries the node's
// label (agent.LabelNode) and the data directory's (agent.LabelData), every
// image up built the data directory's (docker ANDs the filters).
func dockerCleanup(nodes []string, dataID string) string {
	var s string
	mine := "label=" + agent.LabelData + "=" + dataID
	for _, n := range nodes {
		f := "label=" + agent.LabelNode + "=" + n + " --filter " + mine
		s += fmt.Sprintf("  docker ps --filter %[1]s    (node %[2]s's containers, left running)\n", f, n)
		s += fmt.Sprintf("  docker rm -f $(docker ps -aq --filter %[1]s); docker network prune -f --filter %[1]s    (remove them; its volumes, kept: docker volume ls --filter %[1]s)\n", f)
	}
	s += fmt.Sprintf("  docker image prune -af --filter %s    (then the images up built for this data directory)\n", mine)
	return s
}
