package docker

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/registry"

	"meshplane/agent"
)

// Images ahead of a roll-out (agent.ImagePuller): the agent pulls every
// image its plan needs before it stops anything, and a dry run asks
// whether each is present or could be pulled.

var _ agent.ImagePuller = (*Runtime)(nil)

// distributionEngine is the part of the Docker client that asks a
// registry about an image without pulling it (*client.Client has it). An
// Engine without it (a test's) answers every image it lacks as unknown.
type distributionEngine interface {
	DistributionInspect(ctx context.Context, imageRef, encodedRegistryAuth string) (registry.DistributionInspect, error)
}

// checkTimeout bounds one registry look-up of a dry run, well within the
// bus's dry-run answer (bus.DefaultDryRunAnswer).
const checkTimeout = 15 * time.Second

// PullImage implements agent.ImagePuller: the image CreateContainer would
// run for ref (Options.ResolveImage), pulled when the engine lacks it,
// bounded by Options.PullTimeout. A failed pull wraps ErrImage and
// agent.ErrRuntime.
func (r *Runtime) PullImage(ctx context.Context, ref string) error {
	if err := done(ctx, "pull", ref); err != nil {
		return err
	}
	if _, err := r.ensureImage(ctx, ref); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// CheckImage implements agent.ImagePuller: present when the engine holds
// the image, pullable when its registry answers for it, unavailable (with
// the registry's answer) otherwise. It pulls nothing.
func (r *Runtime) CheckImage(ctx context.Context, ref string) (agent.ImageCheck, error) {
	if err := done(ctx, "check image", ref); err != nil {
		return agent.ImageCheck{}, err
	}
	if r.opt.ResolveImage != nil {
		ref = r.opt.ResolveImage(ref)
	}
	if _, err := r.eng.ImageInspect(ctx, ref); err == nil {
		return agent.ImageCheck{State: agent.ImagePresent}, nil
	} else if !cerrdefs.IsNotFound(err) {
		return agent.ImageCheck{}, fail("inspect image", ref, err)
	}
	de, ok := r.eng.(distributionEngine)
	if !ok {
		return agent.ImageCheck{State: agent.ImageUnknown, Detail: "not on the engine; this engine cannot ask the registry"}, nil
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if _, err := de.DistributionInspect(cctx, ref, ""); err != nil {
		if ctx.Err() != nil {
			return agent.ImageCheck{}, fmt.Errorf("docker: check image %s: %w", ref, ctx.Err())
		}
		return agent.ImageCheck{State: agent.ImageUnavailable, Detail: "not on the engine, and its registry does not give it: " + err.Error()}, nil
	}
	return agent.ImageCheck{State: agent.ImagePullable}, nil
}
