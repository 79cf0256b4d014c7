package features

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cucumber/godog"

	"meshplane/commands"
	"meshplane/events"
)

// revertSteps are the steps of mesh revert (issue 21, "back to a
// moment"): a moment kept under a name (the store's head then), a module
// reverted to it through commands.RevertModule, and a plan after that
// revert (nothing appended).
func revertSteps(sc *godog.ScenarioContext) {
	sc.Step(`^the moment is kept as "([^"]*)"$`, momentIsKept)
	sc.Step(`^module "([^"]*)" is reverted to the moment "([^"]*)"$`, moduleIsReverted)
	sc.Step(`^the mesh is planned for "([^"]*)" after module "([^"]*)" is reverted to the moment "([^"]*)"$`, meshIsPlannedAfterRevert)
}

func momentIsKept(ctx context.Context, name string) error {
	w := world(ctx)
	head, err := w.store.Head(ctx)
	if err != nil {
		return err
	}
	if w.moments == nil {
		w.moments = map[string]uint64{}
	}
	w.moments[name] = head
	return nil
}

func (w *World) moment(name string) (commands.Moment, error) {
	p, ok := w.moments[name]
	if !ok {
		return commands.Moment{}, fmt.Errorf("no moment was kept as %q", name)
	}
	return commands.Moment{Position: p}, nil
}

// moduleIsReverted reverts module, and takes the scenario's copy of it to
// be what it is again, for the steps that redefine it after.
func moduleIsReverted(ctx context.Context, module, name string) error {
	w := world(ctx)
	to, err := w.moment(name)
	if err != nil {
		return err
	}
	if err := w.mesh.Do(ctx, commands.RevertModule{Module: module, To: to}); err != nil {
		return err
	}
	m, err := w.mesh.Handler.Module(ctx, module)
	if err != nil {
		return err
	}
	b, err := json.Marshal(m.Spec) // a copy: the steps edit theirs in place
	if err != nil {
		return err
	}
	var spec events.ModuleSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return err
	}
	w.modules[module] = &spec
	return nil
}

func meshIsPlannedAfterRevert(ctx context.Context, node, module, name string) error {
	to, err := world(ctx).moment(name)
	if err != nil {
		return err
	}
	return plan(ctx, node, commands.RevertModule{Module: module, To: to})
}
