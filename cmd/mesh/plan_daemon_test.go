package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// TestDaemonPlanAsksTheAgents: mesh plan against a running controller asks
// each node's agent over the bus (a dry run, answered without applying); a
// node with no agent connected is planned from its last declaration,
// labelled so. Planning appends nothing, and the push after it does what
// the agent said.
func TestDaemonPlanAsksTheAgents(t *testing.T) {
	ctx := context.Background()
	d := meshtest.StartDaemon(t, t.TempDir(), "")
	meshtest.DaemonSetUp(t, d.Client, []string{"n1", "n2"})
	n1 := meshtest.StartNode(t, d.Creds(t, "n1"), t.TempDir())
	if _, err := d.Client.Push(ctx, api.PushRequest{Operator: meshtest.TestOperator}); err != nil {
		t.Fatalf("push: %v", err)
	}
	before := meshtest.InSync(t, d.Client, "n1").Nodes[0].Pushed.Declaration
	applied := len(n1.Applies())

	resp, err := d.Client.Plan(ctx, api.PlanRequest{After: []string{"release searxng n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Nodes) != 2 || resp.Nodes[0].Node != "n1" || resp.Nodes[1].Node != "n2" {
		t.Fatalf("plan: %+v", resp.Nodes)
	}
	p1, p2 := resp.Nodes[0], resp.Nodes[1]
	if p1.Source != api.PlanByAgent {
		t.Fatalf("n1 was planned by %s (%s), want its agent", p1.Source, p1.NoAnswer)
	}
	if !slices.Equal(p1.Outcome.Removed, []string{"searxng"}) {
		t.Fatalf("n1's plan after the release: %s %+v", p1.Headline, p1.Steps)
	}
	if p2.Source != api.PlanByDeclarations || p2.NoAnswer == "" {
		t.Fatalf("n2 (no agent) was planned by %s (%q)", p2.Source, p2.NoAnswer)
	}
	if st := meshtest.InSync(t, d.Client, "n1"); st.Nodes[0].Pushed.Declaration != before {
		t.Fatalf("the plan pushed: %+v", st.Nodes[0].Pushed)
	}

	// The release, for real: its push is applied as the agent said.
	if _, err := d.Client.Release(ctx, api.ModuleNodeRequest{Operator: meshtest.TestOperator, Module: "searxng", Node: "n1"}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, func() error {
		rs := n1.Applies()
		if len(rs) <= applied || rs[len(rs)-1].Outcome.Declaration != p1.Declaration {
			return errors.New("n1 has not applied " + p1.Declaration)
		}
		got := rs[len(rs)-1].Outcome
		if !slices.Equal(got.Removed, p1.Outcome.Removed) || got.Applied != p1.Outcome.Applied || got.Unchanged != p1.Outcome.Unchanged {
			return fmt.Errorf("n1 applied %+v, the plan said %+v", got, p1.Outcome)
		}
		return nil
	})
}
