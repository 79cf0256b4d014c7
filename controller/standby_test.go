package controller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
)

// TestStandby: a standby on the leader's store follows it (reads answer
// what the leader wrote), refuses every write with api.CodeStandby and
// pushes nothing; once it leads, it pushes only what changed since the
// last leader's pushes, and takes writes.
func TestStandby(t *testing.T) {
	h := start(t)
	op := "tester"
	if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.DefineModules(h.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{mod("forge")}}); err != nil {
		t.Fatal(err)
	}

	sbus, ticks := newBus(), make(chan time.Time)
	sb, err := controller.New(controller.Config{Store: h.store, Publisher: sbus, Ticks: ticks, Standby: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sb.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("standby Run: %v", err)
		}
	}()
	tick := func() { ticks <- time.Now(); ticks <- time.Now() }

	info, err := sb.Info(ctx)
	if err != nil || info.Role != api.RoleStandby {
		t.Fatalf("standby Info: %+v, %v; want role %s", info, err, api.RoleStandby)
	}
	writes := []struct {
		name string
		do   func() error
	}{
		{"register", func() error {
			_, err := sb.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"c"}})
			return err
		}},
		{"assign", func() error {
			_, err := sb.Assign(ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"})
			return err
		}},
		{"push", func() error { _, err := sb.Push(ctx, api.PushRequest{}); return err }},
		{"report", func() error { _, err := sb.RecordReport(ctx, commands.Delivery{}); return err }},
	}
	for _, w := range writes {
		t.Run("refused/"+w.name, func(t *testing.T) {
			var rej *commands.Rejection
			if err := w.do(); !errors.As(err, &rej) || rej.Code != api.CodeStandby {
				t.Fatalf("got %v, want a rejection with code %s", err, api.CodeStandby)
			}
		})
	}
	tick()
	if n := len(sbus.counts()); n != 0 {
		t.Fatalf("the standby pushed to %d node(s)", n)
	}
	st, err := sb.Status(ctx, api.StatusRequest{})
	if err != nil || len(st.Nodes) != 2 {
		t.Fatalf("standby status: %d node(s), %v; want the leader's 2", len(st.Nodes), err)
	}

	// The leader stops leading (its process would die); the standby leads.
	sb.Lead()
	tick()
	if got := sbus.counts(); len(got) != 0 {
		t.Fatalf("the new leader pushed again what the last one pushed: %v", got)
	}
	if _, err := sb.Assign(ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"}); err != nil {
		t.Fatalf("a write after Lead: %v", err)
	}
	if got := sbus.counts(); got["a"] != 1 || got["b"] != 1 {
		t.Fatalf("pushes after the assign: %v, want a and b once", got)
	}
	if info, _ := sb.Info(ctx); info.Role != api.RoleLeader {
		t.Fatalf("role after Lead: %s", info.Role)
	}
}
