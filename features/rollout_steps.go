package features

import (
	"context"
	"fmt"
	"strings"

	"github.com/cucumber/godog"

	"meshplane/commands"
	"meshplane/events"
)

// rolloutSteps are the steps of roll-outs that wait and revert by
// themselves (issue 34, section 4): a module's update block, a build the
// world makes crash at every start, and what the mesh did about it.
func rolloutSteps(sc *godog.ScenarioContext) {
	sc.Step(`^module "([^"]*)" rolls out start-first and reverts a roll-out that fails its health check$`, rollsOutStartFirstReverting)
	sc.Step(`^module "([^"]*)" rolls out start-first and gives up on a roll-out that fails its health check$`, rollsOutStartFirstPausing)
	sc.Step(`^every container of image "([^"]*)" exits with code (\d+) at every start$`, imageExitsAtEveryStart)
	sc.Step(`^module "([^"]*)" was reverted after a failed roll-out$`, moduleWasRevertedAfterFailedRollout)
	sc.Step(`^module "([^"]*)" was not reverted$`, moduleWasNotReverted)
	sc.Step(`^module "([^"]*)" runs the build at digest "([^"]*)" on "([^"]*)"$`, moduleRunsBuildAt)
}

func rollsOut(ctx context.Context, module, onFailure string) error {
	return world(ctx).define(ctx, module, func(s *events.ModuleSpec) error {
		u := events.DefaultUpdatePolicy()
		u.Order, u.OnFailure = events.UpdateStartFirst, onFailure
		s.Update = &u
		return nil
	})
}

func rollsOutStartFirstReverting(ctx context.Context, module string) error {
	return rollsOut(ctx, module, events.UpdateRevert)
}

func rollsOutStartFirstPausing(ctx context.Context, module string) error {
	return rollsOut(ctx, module, events.UpdatePause)
}

// imageExitsAtEveryStart makes every container created from image, on
// every node, exit with code at each start from now on: a bad build.
func imageExitsAtEveryStart(ctx context.Context, image string, code int) error {
	w := world(ctx)
	for _, name := range w.mesh.Nodes() {
		n, err := w.mesh.Node(name)
		if err != nil {
			return err
		}
		if err := n.Runtime.ImageCrashes(image, 0, code, fmt.Sprintf("exited with code %d\n", code)); err != nil {
			return err
		}
	}
	return nil
}

// rolloutsOf is module's rollout.failed, in order, with their ids, and the
// causations of its module stream's events.
func rolloutsOf(ctx context.Context, module string) (failed []events.RolloutFailed, ids []string, causes []string, err error) {
	w := world(ctx)
	all, err := w.store.ReadAll(ctx, 0, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, ev := range all {
		switch {
		case ev.Type == events.TypeRolloutFailed:
			p, err := w.mesh.Registry.Decode(ev)
			if err != nil {
				return nil, nil, nil, err
			}
			if rf := p.(events.RolloutFailed); rf.Module == module {
				failed, ids = append(failed, rf), append(ids, ev.ID.String())
			}
		case ev.Stream == events.ModuleStream(module):
			causes = append(causes, ev.Causation)
		}
	}
	return failed, ids, causes, nil
}

func moduleWasRevertedAfterFailedRollout(ctx context.Context, module string) error {
	failed, ids, causes, err := rolloutsOf(ctx, module)
	if err != nil {
		return err
	}
	for i, rf := range failed {
		if rf.Action != events.RolloutRevert {
			continue
		}
		for _, c := range causes {
			if c == commands.RolloutCausePrefix+ids[i] {
				return nil
			}
		}
		return fmt.Errorf("module %s's roll-out failed (%+v), and nothing of the module was reverted after it (causations %q)", module, rf, causes)
	}
	return fmt.Errorf("module %s has no failed roll-out to revert (%+v)", module, failed)
}

func moduleWasNotReverted(ctx context.Context, module string) error {
	failed, _, causes, err := rolloutsOf(ctx, module)
	if err != nil {
		return err
	}
	for _, c := range causes {
		if strings.HasPrefix(c, commands.RolloutCausePrefix) {
			return fmt.Errorf("module %s was reverted after a failed roll-out (an event caused by %s)", module, c)
		}
	}
	if len(failed) == 0 {
		return fmt.Errorf("module %s has no failed roll-out: nothing was given up", module)
	}
	for _, rf := range failed {
		if rf.Action == events.RolloutRevert {
			return fmt.Errorf("module %s's failed roll-out says revert: %+v", module, rf)
		}
	}
	return nil
}

// moduleRunsBuildAt checks that each of module's artifact containers on
// node runs, on the engine (the simulated runtime), the build at digest.
func moduleRunsBuildAt(ctx context.Context, module, digest, node string) error {
	w := world(ctx)
	spec, ok := w.modules[module]
	if !ok {
		return fmt.Errorf("no module %s in this scenario", module)
	}
	n, err := w.mesh.Node(node)
	if err != nil {
		return err
	}
	checked := 0
	for _, c := range spec.Containers {
		if c.Artifact == "" {
			continue
		}
		got, ok := n.Runtime.Container(c.Name)
		if !ok {
			return fmt.Errorf("container %s of module %s does not run on %s (containers: %v)", c.Name, module, node, n.Runtime.Names())
		}
		if !strings.HasSuffix(got.Image, "@"+digest) {
			return fmt.Errorf("container %s on %s runs %s, not the build at %s", c.Name, node, got.Image, digest)
		}
		checked++
	}
	if checked == 0 {
		return fmt.Errorf("module %s runs no artifact", module)
	}
	return nil
}
