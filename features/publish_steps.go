package features

import (
	"context"
	"fmt"
	"strings"

	"github.com/cucumber/godog"

	"meshplane/events"
)

// publishSteps are the steps of a container's health check, network and
// published ports (issue 34, "modules that say how they are checked,
// published and restarted"): each (re)defines the module through
// commands.DefineModule, as `mesh module define` of a module file with that
// key would.
func publishSteps(sc *godog.ScenarioContext) {
	sc.Step(`^module "([^"]*)" container "([^"]*)" checks its health with "([^"]*)"$`, containerChecksHealth)
	sc.Step(`^module "([^"]*)" container "([^"]*)" uses the node's network$`, containerUsesNodeNetwork)
	sc.Step(`^module "([^"]*)" container "([^"]*)" publishes port "([^"]*)" of its node as (\d+)$`, containerPublishes)
	sc.Step(`^the port "([^"]*)" of node "([^"]*)" is set to (\d+)$`, portOfNodeIsSet)
	sc.Step(`^container "([^"]*)" on "([^"]*)" publishes port (\d+)$`, containerPublishesPort)
}

// editContainer redefines module with container changed by edit.
func editContainer(ctx context.Context, module, container string, edit func(*events.ContainerSpec)) error {
	w := world(ctx)
	return w.define(ctx, module, func(s *events.ModuleSpec) error {
		c, err := w.container(s, module, container)
		if err != nil {
			return err
		}
		edit(c)
		return nil
	})
}

// containerChecksHealth: healthcheck: {test: [CMD-SHELL, command]}.
func containerChecksHealth(ctx context.Context, module, container, command string) error {
	return editContainer(ctx, module, container, func(c *events.ContainerSpec) {
		c.Healthcheck = &events.Healthcheck{Test: []string{"CMD-SHELL", command}}
	})
}

// containerUsesNodeNetwork: network: host.
func containerUsesNodeNetwork(ctx context.Context, module, container string) error {
	return editContainer(ctx, module, container, func(c *events.ContainerSpec) { c.Network = "host" })
}

// containerPublishes: publish: [{port: PORT, container: N}].
func containerPublishes(ctx context.Context, module, container, port string, inside int) error {
	return editContainer(ctx, module, container, func(c *events.ContainerSpec) {
		c.Publish = append(c.Publish, events.Publish{Port: port, Container: inside})
	})
}

// portOfNodeIsSet is the When form of `node "N" has port "P" set to V`.
func portOfNodeIsSet(ctx context.Context, port, node string, value int) error {
	return nodeHasPort(ctx, node, port, value)
}

// containerPublishesPort: the container the node last applied publishes
// the host port, whatever the address.
func containerPublishesPort(ctx context.Context, container, node string, port int) error {
	c, err := appliedContainer(ctx, node, container)
	if err != nil {
		return err
	}
	var have []string
	for _, p := range c.Publish {
		if p.HostPort == port {
			return nil
		}
		have = append(have, fmt.Sprintf("%s:%d→%d", p.HostIP, p.HostPort, p.ContainerPort))
	}
	if len(have) == 0 {
		return fmt.Errorf("container %s on %s publishes no port, not %d", container, node, port)
	}
	return fmt.Errorf("container %s on %s publishes %s, not port %d", container, node, strings.Join(have, ", "), port)
}
