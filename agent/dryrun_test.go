package agent_test

import (
	"context"
	"reflect"
	"testing"

	"meshplane/agent"
	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
)

// TestDryRunPredictsTheApply: for each change, a dry run changes nothing
// (runtime, state, outbox), and the apply after it makes exactly the
// report the dry run predicted.
func TestDryRunPredictsTheApply(t *testing.T) {
	base := decl("novox/1", append(forge("/var/lib/forge"), routeProxy()...)...)
	tests := []struct {
		name    string
		found   string // a directory found on the node before
		first   declaration.Declaration
		next    declaration.Declaration
		actions map[string]string // resource → the action the preview names
		change  agent.Change      // a change the preview lists (Field empty: none checked)
	}{
		{name: "mount moves", first: base, next: decl("novox/2", append(forge("/srv/forge"), routeProxy()...)...),
			actions: map[string]string{"web": "replace", "forge-data": "create"},
			change:  agent.Change{Field: "mounts./data", From: "/var/lib/forge", To: "/srv/forge"}},
		{name: "nothing changes", first: base, next: base, actions: map[string]string{}},
		{name: "a container goes", first: base, next: decl("novox/2", forge("/var/lib/forge")...),
			actions: map[string]string{"proxy": "remove", "ca": "remove", "acme": "remove"}},
		{name: "found data is held", found: caPath, first: adopted(decl("novox/1", forge("/var/lib/forge")...)),
			next:    adopted(decl("novox/2", append(forge("/var/lib/forge"), routeProxy()...)...)),
			actions: map[string]string{"ca": "hold", "route-proxy-ca": "hold", "proxy": "create", "acme": "create"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			if tt.found != "" {
				if err := fx.rt.MakeDirectory(tt.found, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			fx.apply(t, tt.first)
			before, state := fx.rt.Paths(), fx.ag.State()
			names := fx.rt.Names()
			pv, err := fx.ag.DryRun(context.Background(), tt.next)
			if err != nil {
				t.Fatal(err)
			}
			if fx.rt.Paths() != before || !reflect.DeepEqual(fx.rt.Names(), names) || !reflect.DeepEqual(fx.ag.State(), state) {
				t.Fatal("the dry run changed the node or the agent's state")
			}
			got := map[string]string{}
			for _, s := range pv.Steps {
				got[s.Name] = s.Action
				if tt.change.Field != "" && s.Name == "web" && !containsChange(s.Changes, tt.change) {
					t.Errorf("web's changes %+v lack %+v", s.Changes, tt.change)
				}
			}
			if !reflect.DeepEqual(got, tt.actions) {
				t.Errorf("preview actions %v, want %v", got, tt.actions)
			}
			rep := fx.apply(t, tt.next)
			want := pv.Outcome
			want.ApplyID = rep.Outcome.ApplyID
			if !reflect.DeepEqual(rep.Outcome, want) {
				t.Errorf("apply reported\n  %+v\nthe dry run predicted\n  %+v", rep.Outcome, want)
			}
		})
	}
}

func containsChange(cs []agent.Change, c agent.Change) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// TestDeclaredIsTheDeclarationDiff: against what a declaration declares,
// the same declaration is unchanged throughout, and the next names what
// changed.
func TestDeclaredIsTheDeclarationDiff(t *testing.T) {
	prev := decl("novox/1", append(forge("/var/lib/forge"), routeProxy()...)...)
	obs, st := nodeplan.Declared(prev)
	if pv := agent.PreviewOf("novox", prev, agent.Diff(prev, obs, st)); len(pv.Steps) != 0 || pv.Hosts != "" || pv.Unchanged != len(prev.Resources) {
		t.Fatalf("a declaration against itself: %+v", pv)
	}
	next := decl("novox/2", forge("/srv/forge")...)
	pv := agent.PreviewOf("novox", next, agent.Diff(next, obs, st))
	got := map[string]string{}
	for _, s := range pv.Steps {
		got[s.Name] = s.Action
	}
	want := map[string]string{"web": "replace", "forge-data": "create", "proxy": "remove", "ca": "remove", "acme": "remove"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("declaration diff %v, want %v", got, want)
	}
}
