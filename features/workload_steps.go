package features

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"meshplane/api"
	"meshplane/render"
	"meshplane/sim"
)

// workloadSteps are the steps of what the engine runs (issue 34): the
// world makes a container fail as a real one would (world steps, on the
// simulated runtime, whose node's agent then follows its containers),
// time passes, and status and why say so.
func workloadSteps(sc *godog.ScenarioContext) {
	sc.Step(`^container "([^"]*)" on "([^"]*)" exits with code (\d+) at every start$`, containerExitsAtEveryStart)
	sc.Step(`^container "([^"]*)" on "([^"]*)" runs again$`, containerRunsAgain)
	sc.Step(`^container "([^"]*)" on "([^"]*)" becomes unhealthy$`, containerBecomesUnhealthy)
	sc.Step(`^container "([^"]*)" on "([^"]*)" becomes healthy$`, containerBecomesHealthy)
	sc.Step(`^container "([^"]*)" on "([^"]*)" is killed for lack of memory$`, containerIsOOMKilled)
	sc.Step(`^(\d+) minutes pass$`, minutesPass)
	sc.Step(`^status of "([^"]*)" shows "([^"]*)" (crash-looping|unhealthy|running|starting)$`, statusShowsContainer)
	sc.Step(`^why "([^"]*)" on "([^"]*)" names "([^"]*)"$`, whyContainerNames)
}

// followed is node, its agent following its containers from now on.
func followed(ctx context.Context, node string) (*sim.Node, error) {
	return world(ctx).mesh.Follow(node)
}

// CrashLog is what a container made to exit at every start prints.
func crashLog(container string, code int) string {
	return fmt.Sprintf("%s: exited with code %d", container, code)
}

func containerExitsAtEveryStart(ctx context.Context, container, node string, code int) error {
	n, err := followed(ctx, node)
	if err != nil {
		return err
	}
	return n.Runtime.ExitAtStart(container, code, crashLog(container, code))
}

func containerRunsAgain(ctx context.Context, container, node string) error {
	n, err := followed(ctx, node)
	if err != nil {
		return err
	}
	return n.Runtime.RunsAgain(container)
}

func containerBecomesUnhealthy(ctx context.Context, container, node string) error {
	n, err := followed(ctx, node)
	if err != nil {
		return err
	}
	return n.Runtime.Unhealthy(container, "health check failed: connection refused")
}

func containerBecomesHealthy(ctx context.Context, container, node string) error {
	n, err := followed(ctx, node)
	if err != nil {
		return err
	}
	return n.Runtime.Healthy(container)
}

func containerIsOOMKilled(ctx context.Context, container, node string) error {
	n, err := followed(ctx, node)
	if err != nil {
		return err
	}
	return n.Runtime.KillOOM(container)
}

// minutesPass moves the scenario's clock on, then each node's agent makes a
// pass (its drift check): it reports what its runtime shows.
func minutesPass(ctx context.Context, n int) error {
	w := world(ctx)
	if err := w.mesh.Wait(time.Duration(n) * time.Minute); err != nil {
		return err
	}
	for _, node := range w.mesh.Nodes() {
		if _, _, err := w.mesh.Pass(ctx, node); err != nil {
			return fmt.Errorf("the pass on %s after %d minutes: %w", node, n, err)
		}
	}
	return nil
}

func statusShowsContainer(ctx context.Context, node, container, state string) error {
	st, err := statusOf(ctx, node)
	if err != nil {
		return err
	}
	c, ok := st.Containers[container]
	if !ok {
		return fmt.Errorf("status of %s says nothing of container %s (workload %s, containers %v)", node, container, st.Workload, st.Containers)
	}
	if c.State != state {
		return fmt.Errorf("status of %s shows %s %s (%s), not %s", node, container, c.State, c.Reason, state)
	}
	return nil
}

// whyContainerNames checks the answer of mesh why for container on node,
// as the verb prints it.
func whyContainerNames(ctx context.Context, container, node, words string) error {
	w, err := view(ctx)
	if err != nil {
		return err
	}
	resp, err := w.mesh.Controller.Why(ctx, api.WhyRequest{Node: node, Resource: container})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := render.Why(&b, render.Table, resp, api.Skipped{}); err != nil {
		return err
	}
	if !strings.Contains(b.String(), words) {
		return fmt.Errorf("why %s on %s does not name %q:\n%s", container, node, words, b.String())
	}
	return nil
}
