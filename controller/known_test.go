package controller_test

import (
	"errors"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
)

// TestUnknownNamesRefused: a query naming a node, a module, a resource or
// an event type that matches nothing is a rejection with its code (the
// CLI's exit 3, the API's 404 or 422), never an empty answer; a prefix of
// types selects every type it begins.
func TestUnknownNamesRefused(t *testing.T) {
	h := start(t)
	c := h.ctrl
	op := "tester"
	if _, err := c.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DefineModules(h.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{mod("forge")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Assign(h.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"}); err != nil {
		t.Fatal(err)
	}
	code := func(err error) string {
		var r *commands.Rejection
		if errors.As(err, &r) {
			return r.Code
		}
		if err != nil {
			return "failed: " + err.Error()
		}
		return ""
	}
	for _, q := range []struct {
		name string
		err  error
		want string
	}{
		{"timeline --node nosuch", second(c.Timeline(h.ctx, api.TimelineRequest{Node: "nosuch"})), commands.CodeNodeUnknown},
		{"timeline --module nosuch", second(c.Timeline(h.ctx, api.TimelineRequest{Module: "nosuch"})), commands.CodeModuleUnknown},
		{"timeline --type bogus", second(c.Timeline(h.ctx, api.TimelineRequest{Type: "bogus"})), commands.CodeInvalid},
		{"timeline locally --node nosuch", second(c.QueryTimeline(h.ctx, api.TimelineRequest{Node: "nosuch"})), commands.CodeNodeUnknown},
		{"timeline locally --type bogus", second(c.QueryTimeline(h.ctx, api.TimelineRequest{Type: "bogus"})), commands.CodeInvalid},
		{"why a nosuch", second(c.Why(h.ctx, api.WhyRequest{Node: "a", Resource: "nosuch"})), api.CodeResourceUnknown},
		{"why nosuch web", second(c.Why(h.ctx, api.WhyRequest{Node: "nosuch", Resource: "forge-web"})), commands.CodeNodeUnknown},
		{"why a forge-web (declared, never applied)", second(c.Why(h.ctx, api.WhyRequest{Node: "a", Resource: "forge-web"})), ""},
		{"churn nosuch", second(c.Churn(h.ctx, api.ChurnRequest{Nodes: []string{"nosuch"}})), commands.CodeNodeUnknown},
		{"timeline --node a --module forge", second(c.Timeline(h.ctx, api.TimelineRequest{Node: "a", Module: "forge"})), ""},
	} {
		if got := code(q.err); got != q.want {
			t.Errorf("%s: %q (%v), want %q", q.name, got, q.err, q.want)
		}
	}
	_, err := c.Timeline(h.ctx, api.TimelineRequest{Type: "bogus"})
	if err == nil || !strings.Contains(err.Error(), events.TypeApplyReported) {
		t.Errorf("an unknown type's refusal %v does not name the types", err)
	}

	// A prefix selects each type it begins, in position order.
	for prefix, types := range map[string][]string{
		"module.":          {events.TypeModuleDefined, events.TypeModuleAssigned},
		"declaration.":     {events.TypeDeclarationComposed},
		"node":             {events.TypeNodeRegistered},
		"module.assigned":  {events.TypeModuleAssigned},
		"declaration.comp": {events.TypeDeclarationComposed},
	} {
		p, err := c.Timeline(h.ctx, api.TimelineRequest{Type: prefix})
		if err != nil {
			t.Fatalf("--type %s: %v", prefix, err)
		}
		seen := map[string]bool{}
		var last uint64
		for _, en := range p.Entries {
			if !strings.HasPrefix(en.Type, prefix) {
				t.Errorf("--type %s: an entry of %s", prefix, en.Type)
			}
			if en.Position <= last {
				t.Errorf("--type %s: positions out of order", prefix)
			}
			last = en.Position
			seen[en.Type] = true
		}
		for _, ty := range types {
			if !seen[ty] {
				t.Errorf("--type %s: no entry of %s in %d entries", prefix, ty, len(p.Entries))
			}
		}
	}
}

func second[T any](_ T, err error) error { return err }
