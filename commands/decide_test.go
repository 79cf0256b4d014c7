package commands

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"meshplane/events"
)

// given folds payloads into the state a command would see.
func given(ps ...events.Payload) State {
	var s State
	for i, p := range ps {
		ev := events.Event{Version: uint64(i + 1), Type: p.EventType()}
		switch p.(type) {
		case events.ModuleDefined, events.ArtifactRecorded, events.ModuleDeployed:
			s.Module = EvolveModule(s.Module, ev, p)
		default:
			s.Node = EvolveNode(s.Node, ev, p)
		}
	}
	return s
}

var webSpec = events.ModuleSpec{
	Routes:     []string{"forge.zurag.be"},
	Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1"}},
}

const (
	fullDigest  = "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
	otherDigest = "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"
)

// TestDecide: given events, when a command, then events or a rejection. A
// command whose work is already done is a no-op: no events, no error.
func TestDecide(t *testing.T) {
	reg := events.NodeRegistered{Node: "novox"}
	adopted := events.NodeAdopted{Node: "novox"}
	defined := events.ModuleDefined{Module: "forge", Spec: webSpec}
	assigned := events.ModuleAssigned{Module: "forge", Node: "novox"}
	taken := events.ModuleTaken{Module: "forge", Node: "novox"}
	port := events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"}
	recorded := events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: fullDigest} // before policies: a deployment
	// A build is not a deployment (seed 002): builds recorded under a policy.
	rollOutSpec := webSpec
	rollOutSpec.Upgrade = events.UpgradeRollOut
	rollOut := events.ModuleDefined{Module: "forge", Spec: rollOutSpec}
	build := func(d string) []events.Build { return []events.Build{{Name: "forge/web", Digest: d}} }
	recordedManual := func(d string) events.ArtifactRecorded {
		return events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: d, Upgrade: events.UpgradeManual}
	}
	recordedRollOut := events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: otherDigest, Upgrade: events.UpgradeRollOut}
	firstBuild := events.ModuleDeployed{Module: "forge", Builds: build(fullDigest), By: events.DeployedByFirstBuild}
	deployedOther := events.ModuleDeployed{Module: "forge", Builds: build(otherDigest), By: events.DeployedByOperator}
	long := strings.Repeat("n", 100_000)
	tests := []struct {
		name   string
		given  []events.Payload
		claims map[string]string
		when   Command
		then   []events.Payload
		code   string // rejection code, when rejected
		msg    string // the rejection's message contains this
	}{
		{name: "register", when: RegisterNode{Node: "novox"}, then: []events.Payload{reg}},
		{name: "register again: already done", given: []events.Payload{reg}, when: RegisterNode{Node: "novox"}},
		{name: "register a bad name", when: RegisterNode{Node: "No Vox"}, code: CodeInvalid},
		{name: "register a name of 64 bytes", when: RegisterNode{Node: strings.Repeat("n", 64)}, code: CodeInvalid},
		{name: "register a long name, shortened in the message", when: RegisterNode{Node: long}, code: CodeInvalid, msg: `"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"… (100000 bytes)`},
		// The one name rule (events.CheckName), the rule broken named.
		{name: "register x..y", when: RegisterNode{Node: "x..y"}, code: CodeInvalid, msg: `node name "x..y": byte 1 is '.'`},
		{name: "register a name with '_'", when: RegisterNode{Node: "web_a"}, code: CodeInvalid, msg: `node name "web_a": byte 3 is '_'`},
		{name: "register a name with '.'", when: RegisterNode{Node: "web.a"}, code: CodeInvalid, msg: `byte 3 is '.'`},
		{name: "register a name ending in '-'", when: RegisterNode{Node: "web-"}, code: CodeInvalid, msg: `a '-' at the start or the end`},
		{name: "register a name with a NUL", when: RegisterNode{Node: "a\x00b"}, code: CodeInvalid, msg: `byte 1 is '\x00'`},
		{name: "register an empty name", when: RegisterNode{Node: ""}, code: CodeInvalid, msg: `node name "": empty`},
		{name: "define Bad Name/../x", when: DefineModule{Module: "Bad Name/../x", Spec: webSpec}, code: CodeInvalid, msg: `module name "Bad Name/../x": byte 0 is 'B'`},
		{name: "assign a module named with '.'", given: []events.Payload{reg}, when: AssignModule{Module: "forge.v2", Node: "novox"}, code: CodeInvalid, msg: `module name "forge.v2"`},
		{name: "a port name with '_'", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: "port.st_ore", Value: "1"}, code: CodeInvalid, msg: `setting "port.st_ore": port name "st_ore": byte 2 is '_'`},
		{name: "a container name with '.'", when: DefineModule{Module: "forge", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web.a", Image: "i"}}}}, code: CodeInvalid, msg: `containers[0].name: "web.a": byte 3 is '.'`},
		{name: "adopt", given: []events.Payload{reg}, when: AdoptNode{Node: "novox"}, then: []events.Payload{adopted}},
		{name: "adopt again: already done", given: []events.Payload{reg, adopted}, when: AdoptNode{Node: "novox"}},
		{name: "adopt unknown node", when: AdoptNode{Node: "novox"}, code: CodeNodeUnknown},
		{name: "adopt a long name", when: AdoptNode{Node: long}, code: CodeInvalid, msg: "(100000 bytes)"},
		{name: "set a port", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"}, then: []events.Payload{port}},
		{name: "set a port to what it is: already done", given: []events.Payload{reg, port}, when: SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"}},
		{name: "clear a setting never set: already done", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: "port.store", Value: ""}},
		{name: "a port that is not a port", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: "port.store", Value: "68520"}, code: CodeInvalid},
		{name: "an address that is not an address", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: "private-address", Value: "10.1"}, code: CodeInvalid},
		{name: "a long setting value, shortened", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: "private-address", Value: long}, code: CodeInvalid, msg: "(100000 bytes) is not an IP address"},
		{name: "a long setting key, shortened", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: long, Value: "1"}, code: CodeInvalid, msg: "unknown node setting"},
		{name: "an unknown setting", given: []events.Payload{reg}, when: SetNodeSetting{Node: "novox", Key: "colour", Value: "red"}, code: CodeInvalid},
		{name: "define", when: DefineModule{Module: "forge", Spec: webSpec}, then: []events.Payload{defined}},
		{name: "define the same again: already done", given: []events.Payload{defined}, when: DefineModule{Module: "forge", Spec: webSpec}},
		{name: "define a container with no image", when: DefineModule{Module: "forge", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web"}}}}, code: CodeInvalid},
		{name: "define a path that is not clean", when: DefineModule{Module: "forge", Spec: events.ModuleSpec{Directories: []events.DirectorySpec{{Path: "/srv//data/."}}}},
			code: CodeInvalid, msg: `directories[0].path: "/srv//data/." is not a clean path`},
		{name: "define a path as a file and a directory", when: DefineModule{Module: "forge", Spec: events.ModuleSpec{
			Directories: []events.DirectorySpec{{Path: "/srv/data"}}, Files: []events.FileSpec{{Path: "/srv/data"}}}},
			code: CodeInvalid, msg: "files[0].path: /srv/data is declared twice"},
		{name: "define a long module name", when: DefineModule{Module: long, Spec: webSpec}, code: CodeInvalid, msg: "module name"},
		{name: "define a route another module routes", claims: map[string]string{"forge.zurag.be": "gitea"},
			when: DefineModule{Module: "forge", Spec: webSpec}, code: CodeRouteClaimed, msg: "module forge routes forge.zurag.be, which module gitea already routes"},
		{name: "redefine with the route it already routes", given: []events.Payload{defined}, claims: map[string]string{"forge.zurag.be": "forge"},
			when: DefineModule{Module: "forge", Spec: events.ModuleSpec{Routes: webSpec.Routes, Containers: []events.ContainerSpec{{Name: "web", Image: "forge:2"}}}},
			then: []events.Payload{events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{Routes: webSpec.Routes, Containers: []events.ContainerSpec{{Name: "web", Image: "forge:2"}}}}}},
		{name: "assign", given: []events.Payload{reg, defined}, when: AssignModule{Module: "forge", Node: "novox"}, then: []events.Payload{assigned}},
		{name: "assign again: already done", given: []events.Payload{reg, defined, assigned}, when: AssignModule{Module: "forge", Node: "novox"}},
		{name: "assign an undefined module", given: []events.Payload{reg}, when: AssignModule{Module: "forge", Node: "novox"}, code: CodeModuleUnknown},
		{name: "assign to an unknown node", given: []events.Payload{defined}, when: AssignModule{Module: "forge", Node: "novox"}, code: CodeNodeUnknown},
		{name: "assign a module whose route an assigned module routes", given: []events.Payload{reg, defined}, claims: map[string]string{"forge.zurag.be": "gitea"},
			when: AssignModule{Module: "forge", Node: "novox"}, code: CodeRouteClaimed, msg: "it routes forge.zurag.be, which module gitea"},
		{name: "release", given: []events.Payload{reg, defined, assigned}, when: ReleaseModule{Module: "forge", Node: "novox"},
			then: []events.Payload{events.ModuleReleased{Module: "forge", Node: "novox"}}},
		{name: "release what is not assigned: already done", given: []events.Payload{reg, defined}, when: ReleaseModule{Module: "forge", Node: "novox"}},
		{name: "release again: already done", given: []events.Payload{reg, defined, assigned, events.ModuleReleased{Module: "forge", Node: "novox"}}, when: ReleaseModule{Module: "forge", Node: "novox"}},
		{name: "release a module never defined", given: []events.Payload{reg}, when: ReleaseModule{Module: "forge", Node: "novox"}, code: CodeModuleUnknown},
		{name: "take on an adopted node", given: []events.Payload{reg, adopted, defined, assigned}, when: TakeModule{Module: "forge", Node: "novox"},
			then: []events.Payload{taken}},
		{name: "take on a node that was not adopted", given: []events.Payload{reg, defined, assigned}, when: TakeModule{Module: "forge", Node: "novox"}, code: CodeNotAdopted},
		{name: "take a module not assigned there", given: []events.Payload{reg, adopted, defined}, when: TakeModule{Module: "forge", Node: "novox"}, code: CodeNotAssigned},
		{name: "take again: already done", given: []events.Payload{reg, adopted, defined, assigned, taken}, when: TakeModule{Module: "forge", Node: "novox"}},
		{name: "take after release and re-assign", given: []events.Payload{reg, adopted, defined, assigned, taken, events.ModuleReleased{Module: "forge", Node: "novox"}, assigned},
			when: TakeModule{Module: "forge", Node: "novox"}, then: []events.Payload{taken}},
		{name: "record an artifact: its first build deploys itself", given: []events.Payload{defined}, when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: fullDigest},
			then: []events.Payload{recordedManual(fullDigest), firstBuild}},
		{name: "record a second build of a manual module: recorded, not deployed", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild},
			when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: otherDigest}, then: []events.Payload{recordedManual(otherDigest)}},
		{name: "record a build of a roll-out module: deployed by the policy", given: []events.Payload{rollOut, recordedManual(fullDigest), firstBuild},
			when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: otherDigest},
			then: []events.Payload{recordedRollOut, events.ModuleDeployed{Module: "forge", Builds: build(otherDigest), By: events.DeployedByRollOut}}},
		{name: "record a first build of a roll-out module: deployed by the policy", given: []events.Payload{rollOut},
			when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: otherDigest},
			then: []events.Payload{recordedRollOut, events.ModuleDeployed{Module: "forge", Builds: build(otherDigest), By: events.DeployedByRollOut}}},
		{name: "record again the build a manual module runs: recorded, already deployed", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild, recordedManual(otherDigest)},
			when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: fullDigest}, then: []events.Payload{recordedManual(fullDigest)}},
		{name: "deploy the latest recorded build", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild, recordedManual(otherDigest)},
			when: DeployModule{Module: "forge"}, then: []events.Payload{deployedOther}},
		{name: "deploy a recorded build by digest", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild, recordedManual(otherDigest)},
			when: DeployModule{Module: "forge", Digest: otherDigest}, then: []events.Payload{deployedOther}},
		{name: "roll back to an earlier build by digest", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild, recordedManual(otherDigest), deployedOther},
			when: DeployModule{Module: "forge", Digest: fullDigest}, then: []events.Payload{events.ModuleDeployed{Module: "forge", Builds: build(fullDigest), By: events.DeployedByOperator}}},
		{name: "deploy what already runs: already done", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild},
			when: DeployModule{Module: "forge"}},
		{name: "deploy by digest what already runs: already done", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild, recordedManual(otherDigest)},
			when: DeployModule{Module: "forge", Digest: fullDigest}},
		{name: "deploy a history recorded before policies: its builds already run", given: []events.Payload{defined, recorded},
			when: DeployModule{Module: "forge"}},
		{name: "deploy a digest never recorded", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild},
			when: DeployModule{Module: "forge", Digest: otherDigest}, code: CodeNoBuild, msg: otherDigest},
		{name: "deploy a bad digest", given: []events.Payload{defined, recordedManual(fullDigest), firstBuild},
			when: DeployModule{Module: "forge", Digest: "sha256:ab"}, code: CodeInvalid},
		{name: "deploy a module with no build", given: []events.Payload{defined}, when: DeployModule{Module: "forge"}, code: CodeNoBuild, msg: "no build"},
		{name: "deploy an undefined module", when: DeployModule{Module: "forge"}, code: CodeModuleUnknown},
		{name: "deploy a module by a bad name", when: DeployModule{Module: "For Ge"}, code: CodeInvalid},
		{name: "define with an unknown upgrade policy", when: DefineModule{Module: "forge", Spec: events.ModuleSpec{Upgrade: "yolo"}}, code: CodeInvalid, msg: "upgrade"},
		{name: "record the same build again: already done", given: []events.Payload{defined, recorded}, when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: fullDigest}},
		{name: "record a newer build over a history before policies", given: []events.Payload{defined, recorded}, when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: otherDigest},
			then: []events.Payload{recordedManual(otherDigest)}},
		{name: "record a short digest", given: []events.Payload{defined}, when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"}, code: CodeInvalid, msg: `digest "sha256:ab12"`},
		{name: "record a digest with no algorithm", given: []events.Payload{defined}, when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: "ab12"}, code: CodeInvalid},
		{name: "record an upper-case digest", given: []events.Payload{defined}, when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: strings.ToUpper(fullDigest)}, code: CodeInvalid},
		{name: "record a sha512 digest", given: []events.Payload{defined}, when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: "sha512:" + strings.Repeat("ab", 64)}, code: CodeInvalid, msg: "sha512"},
		{name: "record an artifact named with '_'", given: []events.Payload{defined}, when: RecordArtifact{Module: "forge", Name: "forge/my_web", Digest: fullDigest}, code: CodeInvalid, msg: `artifact name "forge/my_web": segment "my_web": byte 2 is '_'`},
		{name: "record an artifact of an undefined module", when: RecordArtifact{Module: "forge", Name: "forge/web", Digest: fullDigest}, code: CodeModuleUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := given(tt.given...)
			s.Claims = tt.claims
			got, err := Decide(s, tt.when)
			if tt.code != "" {
				var r *Rejection
				if !errors.As(err, &r) || r.Code != tt.code || !errors.Is(err, ErrRejected) {
					t.Fatalf("Decide = %v, %v; want rejection %s", got, err, tt.code)
				}
				if got != nil {
					t.Fatalf("a rejection came with events: %v", got)
				}
				if !strings.Contains(r.Msg, tt.msg) || len(r.Msg) > 300 {
					t.Fatalf("rejection %q: want it to contain %q, in under 300 bytes", r.Msg, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if !reflect.DeepEqual(got, tt.then) {
				t.Fatalf("Decide = %#v, want %#v", got, tt.then)
			}
			if len(got) == 0 && UnchangedNote(tt.when) == "" {
				t.Fatalf("no sentence for %T's work already done", tt.when)
			}
		})
	}
}

func TestEvolveDoesNotModifyItsInput(t *testing.T) {
	s := given(events.NodeRegistered{Node: "novox"}, events.ModuleAssigned{Module: "a", Node: "novox"})
	before := s.Node.AssignedModules()
	_ = EvolveNode(s.Node, events.Event{Version: 3}, events.ModuleAssigned{Module: "b", Node: "novox"})
	_ = EvolveNode(s.Node, events.Event{Version: 3}, events.ModuleReleased{Module: "a", Node: "novox"})
	if after := s.Node.AssignedModules(); !reflect.DeepEqual(before, after) {
		t.Fatalf("evolve changed the state it was given: %v became %v", before, after)
	}
}

func TestReleaseForgetsTake(t *testing.T) {
	s := given(events.NodeRegistered{Node: "novox"}, events.NodeAdopted{Node: "novox"},
		events.ModuleAssigned{Module: "a", Node: "novox"}, events.ModuleTaken{Module: "a", Node: "novox"},
		events.ModuleReleased{Module: "a", Node: "novox"})
	if len(s.Node.TakenModules()) != 0 || len(s.Node.AssignedModules()) != 0 {
		t.Fatalf("after release: assigned %v, taken %v", s.Node.AssignedModules(), s.Node.TakenModules())
	}
}
