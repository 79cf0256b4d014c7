package features

import (
	"context"
	"strings"

	"github.com/cucumber/godog"

	"meshplane/api"
	"meshplane/events"
	"meshplane/render"
)

// bindingSteps are the steps of what modules give each other (issue 35:
// provides and reaches): each (re)defines the module through
// commands.DefineModule, as `mesh module define` of a module file with
// that key would.
func bindingSteps(sc *godog.ScenarioContext) {
	sc.Step(`^module "([^"]*)" provides "([^"]*)" of kind "([^"]*)" on port "([^"]*)" of its node$`, moduleProvides)
	sc.Step(`^module "([^"]*)" container "([^"]*)" reaches "([^"]*)" of module "([^"]*)" as "([^"]*)"$`, containerReaches)
}

// moduleProvides: provides: {SERVICE: {port: PORT, kind: KIND}}.
func moduleProvides(ctx context.Context, module, service, kind, port string) error {
	return world(ctx).define(ctx, module, func(s *events.ModuleSpec) error {
		if s.Provides == nil {
			s.Provides = map[string]events.Provide{}
		}
		s.Provides[service] = events.Provide{Port: port, Kind: kind}
		return nil
	})
}

// containerReaches: reaches: [{module: PROVIDER, service: SERVICE, env:
// VAR}], or file: VAR when VAR is a path.
func containerReaches(ctx context.Context, module, container, service, provider, target string) error {
	return editContainer(ctx, module, container, func(c *events.ContainerSpec) {
		b := events.Binding{Module: provider, Service: service, Env: target}
		if strings.HasPrefix(target, "/") {
			b.Env, b.File = "", target
		}
		c.Reaches = append(c.Reaches, b)
	})
}

// bindingsBehind is the binding behind each value of container on node
// that the apply at position was given, as `mesh why` words them
// (render.BindingWords), from the controller's answer.
func bindingsBehind(ctx context.Context, w *World, node, container string, position uint64) ([]string, error) {
	resp, err := w.mesh.Controller.Why(ctx, api.WhyRequest{Node: node, Resource: container})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range resp.Touches {
		if t.Entry.Position == position {
			for _, b := range t.Bindings {
				out = append(out, render.BindingWords(b))
			}
		}
	}
	return out, nil
}
