package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"meshplane/declaration"
)

// HealthWaiter is a Runtime that can tell when a container is healthy (the
// engine runs its health check): the Docker runtime is one. With it, a
// container whose depends_on says service_healthy is started only once the
// dependency is healthy; without it, only the order is kept.
type HealthWaiter interface {
	// WaitHealthy returns nil once the managed container name is healthy,
	// ErrUnhealthy when it is unhealthy, has no health check or is not
	// running, and a context error when ctx ends first.
	WaitHealthy(ctx context.Context, name string) error
}

// ErrUnhealthy means a container another one depends on (depends_on,
// condition service_healthy) is not healthy: unhealthy, not running, or
// without a health check.
var ErrUnhealthy = errors.New("not healthy")

// DependencyWait bounds how long an apply waits for one dependency to be
// healthy before it fails the container that depends on it.
const DependencyWait = 2 * time.Minute

// orderByDependencies puts each container step after the container steps
// it depends on (depends_on), keeping the order of steps otherwise. A cycle
// (refused when the module is defined) leaves the steps in it in order.
func orderByDependencies(steps []Step) []Step {
	index := map[string]bool{}
	for _, s := range steps {
		if s.Kind == declaration.KindContainer && s.Action != Remove {
			index[s.Name] = true
		}
	}
	out := make([]Step, 0, len(steps))
	done := map[int]bool{}
	placed := map[string]bool{}
	for len(out) < len(steps) {
		progress := false
		for i, s := range steps {
			if done[i] || !ready(s, index, placed) {
				continue
			}
			out, done[i], progress = append(out, s), true, true
			if s.Kind == declaration.KindContainer && s.Action != Remove {
				placed[s.Name] = true
			}
		}
		if !progress { // a cycle: the rest as they were
			for i, s := range steps {
				if !done[i] {
					out = append(out, s)
				}
			}
			break
		}
	}
	return out
}

// ready: every dependency of s that has a step of its own was placed.
func ready(s Step, index, placed map[string]bool) bool {
	if s.Kind != declaration.KindContainer || s.Action == Remove || s.Resource.Container == nil {
		return true
	}
	for _, d := range s.Resource.Container.DependsOn {
		if index[d.Container] && !placed[d.Container] {
			return false
		}
	}
	return true
}

// awaitDependencies is nil when container step s may be carried out: each
// container it depends on did not fail in this apply, and each it depends
// on as service_healthy is healthy (when rt can tell), waited for at most
// DependencyWait.
func awaitDependencies(ctx context.Context, rt Runtime, s Step, failed map[string]error) error {
	if s.Kind != declaration.KindContainer || s.Action == Remove || s.Resource.Container == nil {
		return nil
	}
	for _, d := range s.Resource.Container.DependsOn {
		if err, ok := failed[d.Container]; ok {
			return fmt.Errorf("%s %s: not started: it depends on %s, which failed: %w", s.Action, s.Name, d.Container, err)
		}
		hw, ok := rt.(HealthWaiter)
		if d.Condition != "service_healthy" || !ok {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, DependencyWait)
		err := hw.WaitHealthy(wctx, d.Container)
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("not healthy within %s: %w", DependencyWait, ErrUnhealthy)
			}
			return fmt.Errorf("%s %s: not started: it depends on %s being healthy: %w", s.Action, s.Name, d.Container, err)
		}
	}
	return nil
}
