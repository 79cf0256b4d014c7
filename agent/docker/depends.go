package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"

	"meshplane/agent"
)

var _ agent.HealthWaiter = (*Runtime)(nil)

// healthPoll is how often WaitHealthy asks the engine.
const healthPoll = 250 * time.Millisecond

// maxProbeOutput bounds the last probe's output an error quotes.
const maxProbeOutput = 256

// WaitHealthy implements agent.HealthWaiter (depends_on with condition
// service_healthy): it inspects the container until the engine calls it
// healthy. Unhealthy (with the last probe's output, bounded and escaped),
// not running (exited, dead; a restarting one is waited for) or without a
// health check is agent.ErrUnhealthy at once; ctx bounds the wait.
func (r *Runtime) WaitHealthy(ctx context.Context, name string) error {
	for {
		ids, err := r.find(ctx, "wait healthy", name)
		if err != nil {
			return err
		}
		in, err := r.eng.ContainerInspect(ctx, ids[0])
		if err != nil {
			return fail("inspect", name, err)
		}
		st := in.State
		switch {
		case st == nil:
			return fmt.Errorf("docker: %s: the engine says nothing of its state: %w", name, agent.ErrUnhealthy)
		case !st.Running && !st.Restarting:
			return fmt.Errorf("docker: %s is %s (exit code %d), not running: %w", name, st.Status, st.ExitCode, agent.ErrUnhealthy)
		case st.Health == nil:
			return fmt.Errorf("docker: %s has no health check to wait for (give it a healthcheck, or depend on it as service_started): %w", name, agent.ErrUnhealthy)
		case st.Health.Status == container.Healthy:
			return nil
		case st.Health.Status == container.Unhealthy:
			out := ""
			if n := len(st.Health.Log); n > 0 {
				out = st.Health.Log[n-1].Output
				if len(out) > maxProbeOutput {
					out = out[:maxProbeOutput] + "…"
				}
			}
			return fmt.Errorf("docker: %s is unhealthy after %d failed checks, the last saying %q: %w", name, st.Health.FailingStreak, out, agent.ErrUnhealthy)
		}
		t := time.NewTimer(healthPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("docker: wait for %s to be healthy (it is %s): %w", name, st.Health.Status, ctx.Err())
		case <-t.C:
		}
	}
}
