package controller_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
	"meshplane/events/memstore"
	"meshplane/wire"
)

// imageBus is a Publisher whose agents answer dry runs with images.
type imageBus struct {
	*bus
	images []wire.ImageCheck
}

func (b imageBus) DryRun(_ context.Context, d declaration.Declaration) (wire.Preview, error) {
	obs, st := nodeplan.Declared(declaration.Declaration{})
	pv := nodeplan.PreviewOf(d.Node, d, nodeplan.Diff(d, obs, st))
	pv.Images = b.images
	return pv, nil
}

// TestPlanSaysWhatTheAgentFoundOfImages: a plan carries what the node's
// agent found of each image (mesh plan, module define --plan).
func TestPlanSaysWhatTheAgentFoundOfImages(t *testing.T) {
	images := []wire.ImageCheck{{Image: "registry.example/forge:1", State: wire.ImageUnavailable, Detail: "manifest unknown", Containers: []string{"forge-web"}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := controller.New(controller.Config{Store: memstore.New(), Publisher: imageBus{bus: newBus(), images: images}, Ticks: make(chan time.Time)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DefineModules(ctx, api.DefineModulesRequest{Operator: "x", Modules: []api.ModuleDefinition{mod("forge")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Assign(ctx, api.ModuleNodeRequest{Operator: "x", Module: "forge", Node: "a"}); err != nil {
		t.Fatal(err)
	}
	plan, err := c.Plan(ctx, api.PlanRequest{Nodes: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []api.ImageCheck{{Image: "registry.example/forge:1", State: "unavailable", Detail: "manifest unknown", Containers: []string{"forge-web"}}}
	if len(plan.Nodes) != 1 || plan.Nodes[0].Source != api.PlanByAgent || !reflect.DeepEqual(plan.Nodes[0].Images, want) {
		t.Fatalf("plan %+v\nwant images %+v", plan.Nodes, want)
	}
}
