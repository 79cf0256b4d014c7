package commands

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"meshplane/events"
)

// TestDecideRemove: given a node's or a module's events, when a removal,
// then its events or a rejection naming what stands in the way; a removal
// done already is no error and appends nothing, and a removed name is
// registered or defined again as a new one.
func TestDecideRemove(t *testing.T) {
	reg := events.NodeRegistered{Node: "novox"}
	adopted := events.NodeAdopted{Node: "novox"}
	port := events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"}
	assigned := func(m string) events.ModuleAssigned { return events.ModuleAssigned{Module: m, Node: "novox"} }
	released := func(m string) events.ModuleReleased { return events.ModuleReleased{Module: m, Node: "novox"} }
	key1, key2 := "U"+strings.Repeat("A", 55), "U"+strings.Repeat("B", 55)
	issued := events.NodeCredentialsIssued{Node: "novox", PublicKey: key1, By: "operator:ana"}
	joined := events.NodeJoined{Node: "novox", TokenID: "t1", PublicKey: key2}
	revoked1 := events.NodeCredentialsRevoked{Node: "novox", PublicKeys: []string{key1}, By: "operator:ana"}
	removed := events.NodeRemoved{Node: "novox"}
	defined := events.ModuleDefined{Module: "forge", Spec: webSpec}
	modRemoved := events.ModuleRemoved{Module: "forge"}
	tests := []struct {
		name       string
		given      []events.Payload
		assignedTo []string
		when       Command
		then       []events.Payload
		code       string
		msg        string
	}{
		{name: "remove a node", given: []events.Payload{reg}, when: RemoveNode{Node: "novox", By: "operator:ana"}, then: []events.Payload{removed}},
		{name: "remove a node: its bus users revoked first, those revoked before left out",
			given: []events.Payload{reg, issued, joined, revoked1}, when: RemoveNode{Node: "novox", By: "operator:ana"},
			then: []events.Payload{events.NodeCredentialsRevoked{Node: "novox", PublicKeys: []string{key2}, By: "operator:ana"}, removed}},
		{name: "remove a node with modules: refused, naming them",
			given: []events.Payload{reg, assigned("forge"), assigned("apps")}, when: RemoveNode{Node: "novox"},
			code: CodeModulesAssigned, msg: "module(s) apps, forge are assigned to it"},
		{name: "remove a node with modules, drained: each released first",
			given: []events.Payload{reg, assigned("forge"), assigned("apps"), issued}, when: RemoveNode{Node: "novox", Drain: true, By: "operator:ana"},
			then: []events.Payload{released("apps"), released("forge"),
				events.NodeCredentialsRevoked{Node: "novox", PublicKeys: []string{key1}, By: "operator:ana"},
				events.NodeRemoved{Node: "novox", Drained: []string{"apps", "forge"}}}},
		{name: "remove a node drained before: the releases named",
			given: []events.Payload{reg, assigned("forge"), assigned("apps"), released("forge"), released("apps")}, when: RemoveNode{Node: "novox", Drain: true, Released: []string{"forge", "apps"}},
			then: []events.Payload{events.NodeRemoved{Node: "novox", Drained: []string{"apps", "forge"}}}},
		{name: "remove a node released of its modules", given: []events.Payload{reg, assigned("forge"), released("forge")}, when: RemoveNode{Node: "novox"}, then: []events.Payload{removed}},
		{name: "remove a removed node: done already", given: []events.Payload{reg, removed}, when: RemoveNode{Node: "novox"}},
		{name: "remove a node never registered", when: RemoveNode{Node: "novox"}, code: CodeNodeUnknown, msg: "not registered"},
		{name: "remove a bad name", when: RemoveNode{Node: "No Vox"}, code: CodeInvalid},
		{name: "a removed node is forgotten: adopt refused", given: []events.Payload{reg, adopted, removed}, when: AdoptNode{Node: "novox"}, code: CodeNodeUnknown},
		{name: "a removed node is forgotten: assign refused", given: []events.Payload{reg, removed, defined}, when: AssignModule{Module: "forge", Node: "novox"}, code: CodeNodeUnknown},
		{name: "a removed node registers again", given: []events.Payload{reg, removed}, when: RegisterNode{Node: "novox"}, then: []events.Payload{reg}},
		{name: "registered again, it is new: not adopted, no settings", given: []events.Payload{reg, adopted, port, removed, reg},
			when: AdoptNode{Node: "novox"}, then: []events.Payload{adopted}},
		{name: "registered again, nothing left to revoke", given: []events.Payload{reg, issued, events.NodeCredentialsRevoked{Node: "novox", PublicKeys: []string{key1}}, removed, reg},
			when: RevokeNode{Node: "novox"}},

		{name: "remove a module", given: []events.Payload{defined}, when: RemoveModule{Module: "forge"}, then: []events.Payload{modRemoved}},
		{name: "remove an assigned module: refused, naming the nodes", given: []events.Payload{defined}, assignedTo: []string{"g14", "novox"},
			when: RemoveModule{Module: "forge"}, code: CodeModuleAssigned, msg: "assigned to g14, novox"},
		{name: "remove a removed module: done already", given: []events.Payload{defined, modRemoved}, when: RemoveModule{Module: "forge"}},
		{name: "remove a module never defined", when: RemoveModule{Module: "forge"}, code: CodeModuleUnknown},
		{name: "a removed module is forgotten: a build refused", given: []events.Payload{defined, modRemoved},
			when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: fullDigest}, code: CodeModuleUnknown},
		{name: "a removed module defines again", given: []events.Payload{defined, modRemoved}, when: DefineModule{Module: "forge", Spec: webSpec}, then: []events.Payload{defined}},
		{name: "defined again, its builds are new: the first deploys itself",
			given: []events.Payload{defined, events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: fullDigest, Upgrade: events.UpgradeManual},
				events.ModuleDeployed{Module: "forge", Builds: []events.Build{{Name: "forge/web", Digest: fullDigest}}, By: events.DeployedByFirstBuild}, modRemoved, defined},
			when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: fullDigest},
			then: []events.Payload{events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: fullDigest, Upgrade: events.UpgradeManual},
				events.ModuleDeployed{Module: "forge", Builds: []events.Build{{Name: "forge/web", Digest: fullDigest}}, By: events.DeployedByFirstBuild}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := givenAll(tt.given...)
			s.AssignedTo = tt.assignedTo
			got, err := Decide(s, tt.when)
			if tt.code != "" {
				var r *Rejection
				if !errors.As(err, &r) || r.Code != tt.code {
					t.Fatalf("err %v, want a rejection %s", err, tt.code)
				}
				if !strings.Contains(r.Msg, tt.msg) {
					t.Errorf("message %q lacks %q", r.Msg, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.then) {
				t.Errorf("got %#v\nwant %#v", got, tt.then)
			}
		})
	}
}

// givenAll is given, with the removals folded where they belong.
func givenAll(ps ...events.Payload) State {
	var s State
	for i, p := range ps {
		ev := events.Event{Version: uint64(i + 1), Type: p.EventType()}
		switch p.(type) {
		case events.ModuleDefined, events.ArtifactRecorded, events.ModuleDeployed, events.ModuleRemoved:
			s.Module = EvolveModule(s.Module, ev, p)
		default:
			s.Node = EvolveNode(s.Node, ev, p)
		}
	}
	return s
}

// TestEvolveRemoved: a removal forgets what a new registration or
// definition must not inherit, and keeps what the stream's later events
// need: the count of declarations (ids stay unique), the bus users and
// their revocation.
func TestEvolveRemoved(t *testing.T) {
	key := "U" + strings.Repeat("A", 55)
	s := givenAll(
		events.NodeRegistered{Node: "novox"}, events.NodeAdopted{Node: "novox"},
		events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "1"},
		events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: "sha256:1", Resources: []events.ResourceRef{{Name: "web"}}},
		events.NodeJoinTokenIssued{Node: "novox", TokenID: "t1", SecretSHA256: "ab"},
		events.NodeCredentialsIssued{Node: "novox", PublicKey: key},
		events.NodeCredentialsRevoked{Node: "novox", PublicKeys: []string{key}},
		events.NodeRemoved{Node: "novox"},
	)
	n := s.Node
	switch {
	case n.Registered, n.Adopted, !n.Removed, len(n.Settings) > 0, len(n.Declared) > 0, n.Current.ID != "":
		t.Errorf("removed node keeps its registration, adoption, settings or declaration: %+v", n)
	case n.Composed != 1:
		t.Errorf("composed %d, want 1 kept (the next declaration is novox/2)", n.Composed)
	case len(n.Access.Tokens) > 0:
		t.Errorf("an unused join token outlives the removal: %+v", n.Access.Tokens)
	case !n.Access.Revoked[key] || len(n.Access.Keys) != 1:
		t.Errorf("the revoked user is forgotten: %+v", n.Access)
	case n.Version != 8:
		t.Errorf("version %d, want 8", n.Version)
	}
	again := EvolveNode(n, events.Event{Version: 9, Type: events.TypeNodeRegistered}, events.NodeRegistered{Node: "novox"})
	if !again.Registered || again.Removed {
		t.Errorf("registered again: %+v", again)
	}
	m := givenAll(events.ModuleDefined{Module: "forge", Spec: webSpec},
		events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: fullDigest},
		events.ModuleRemoved{Module: "forge"}).Module
	if m.Defined || !m.Removed || len(m.Artifacts)+len(m.Deployed)+len(m.Builds)+len(m.Recorded) > 0 || m.Version != 3 || m.Name != "forge" {
		t.Errorf("removed module keeps its definition or builds: %+v", m)
	}
}
