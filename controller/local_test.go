package controller_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// Preloaded projections: both or neither, a timeline query only with them;
// queries catch them up from where they were loaded and ask the override
// for the timeline; why refuses a timeline on disk.
func TestPreloadedProjections(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, 400); err != nil {
		t.Fatal(err)
	}
	query := func(projections.Filter) ([]projections.Entry, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		cfg  controller.Config
	}{
		{"views without a runner", controller.Config{Store: store, Views: projections.New()}},
		{"a runner without views", controller.Config{Store: store, Runner: projections.NewRunner(store, events.NewRegistry())}},
		{"a timeline query without views", controller.Config{Store: store, TimelineQuery: query}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := controller.New(tc.cfg); err == nil {
				t.Errorf("New accepted %s", tc.name)
			}
		})
	}

	// Views folded to 200 of the events, as a snapshot would leave them.
	reg := events.NewRegistry()
	views := projections.New()
	runner := projections.NewRunner(store, reg, views.All()...)
	if err := runner.CatchUpTo(ctx, 200); err != nil {
		t.Fatal(err)
	}
	var asked []projections.Filter
	errDisk := errors.New("disk says no")
	c, err := controller.New(controller.Config{
		Store: store, Registry: reg, Views: views, Runner: runner,
		TimelineQuery: func(f projections.Filter) ([]projections.Entry, error) {
			asked = append(asked, f)
			if f.Node == "node-002" {
				return nil, errDisk
			}
			return views.Timeline.Query(f), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := controller.New(controller.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Status(ctx, api.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := whole.Status(ctx, api.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if head, _ := store.Head(ctx); runner.Position() != head {
		t.Errorf("after a query the preloaded runner is at %d, want the head %d", runner.Position(), head)
	}
	if len(got.Nodes) != len(want.Nodes) {
		t.Fatalf("status of %d nodes, want %d", len(got.Nodes), len(want.Nodes))
	}
	for i := range got.Nodes {
		if g, w := got.Nodes[i], want.Nodes[i]; g.Node != w.Node || g.Sync != w.Sync || g.Health != w.Health {
			t.Errorf("node %s: %s/%s, want %s/%s", g.Node, g.Sync, g.Health, w.Sync, w.Health)
		}
	}
	page, err := c.Timeline(ctx, api.TimelineRequest{Node: "node-001", Limit: 5})
	if err != nil || len(page.Entries) != 5 || len(asked) != 1 || asked[0].Node != "node-001" {
		t.Errorf("timeline: %d entries, %v; the override was asked %+v", len(page.Entries), err, asked)
	}
	if _, err := c.Timeline(ctx, api.TimelineRequest{Node: "node-002", Limit: 5}); !errors.Is(err, errDisk) {
		t.Errorf("timeline whose query fails: %v, want its error", err)
	}
	if _, err := c.Why(ctx, api.WhyRequest{Node: "node-001", Resource: "x"}); err == nil || !strings.Contains(err.Error(), "whole timeline") {
		t.Errorf("why on a timeline on disk: %v, want a refusal", err)
	}
}
