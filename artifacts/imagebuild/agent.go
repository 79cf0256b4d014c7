package imagebuild

import (
	"context"
	"fmt"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// The agent image: the mesh binary, running `mesh agent`.
const (
	// AgentProgram is the package the agent image is built from.
	AgentProgram = "meshplane/cmd/mesh"
	// AgentTag is the agent image's name in its tarball (`task
	// image:agent` writes it; `docker load` tags it so).
	AgentTag = "meshplane/mesh-agent:latest"
	// AgentData is where the agent image keeps its data directory: the
	// volume to mount (the node's credentials, its outbox).
	AgentData = "/var/lib/mesh-agent"
)

var (
	// AgentEntrypoint is the agent image's entrypoint.
	AgentEntrypoint = []string{"/mesh", "agent"}
	// AgentCmd is the agent image's default arguments: the data directory
	// joined before (`mesh agent join ... --data /var/lib/mesh-agent
	// --no-start`), on the Docker engine whose socket is mounted.
	AgentCmd = []string{"--data", AgentData, "--runtime", "docker"}
)

// Agent builds the agent image: the mesh binary (AgentProgram) as Program
// builds it, with entrypoint AgentEntrypoint and command AgentCmd. It
// declares no volume (an anonymous one would hide a forgotten -v, and the
// node's credentials with it). To run it, see README "Run the agent in a
// container": the engine's socket and the data directory mounted.
func Agent(ctx context.Context, opt Options) (v1.Image, error) {
	im, err := Program(ctx, AgentProgram, opt)
	if err != nil {
		return nil, err
	}
	cf, err := im.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: agent: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Config.Entrypoint = slices.Clone(AgentEntrypoint)
	cf.Config.Cmd = slices.Clone(AgentCmd)
	if im, err = mutate.ConfigFile(im, cf); err != nil {
		return nil, fmt.Errorf("imagebuild: agent: %w", err)
	}
	return im, nil
}
