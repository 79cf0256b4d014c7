package commands

import (
	"errors"
	"reflect"
	"testing"

	"meshplane/events"
)

// given folds payloads into the state a command would see.
func given(ps ...events.Payload) State {
	var s State
	for i, p := range ps {
		ev := events.Event{Version: uint64(i + 1), Type: p.EventType()}
		switch p.(type) {
		case events.ModuleDefined, events.ArtifactRecorded:
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

func TestDecide(t *testing.T) {
	reg := events.NodeRegistered{Node: "novox"}
	adopted := events.NodeAdopted{Node: "novox"}
	defined := events.ModuleDefined{Module: "forge", Spec: webSpec}
	assigned := events.ModuleAssigned{Module: "forge", Node: "novox"}
	tests := []struct {
		name  string
		given []events.Payload
		when  Command
		then  []events.Payload
		code  string // rejection code, when rejected
	}{
		{"register", nil, RegisterNode{Node: "novox"}, []events.Payload{reg}, ""},
		{"register twice", []events.Payload{reg}, RegisterNode{Node: "novox"}, nil, CodeNodeExists},
		{"register a bad name", nil, RegisterNode{Node: "No Vox"}, nil, CodeInvalid},
		{"adopt", []events.Payload{reg}, AdoptNode{Node: "novox"}, []events.Payload{adopted}, ""},
		{"adopt again changes nothing", []events.Payload{reg, adopted}, AdoptNode{Node: "novox"}, nil, ""},
		{"adopt unknown node", nil, AdoptNode{Node: "novox"}, nil, CodeNodeUnknown},
		{"set a port", []events.Payload{reg}, SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"},
			[]events.Payload{events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"}}, ""},
		{"set a port to what it is", []events.Payload{reg, events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"}},
			SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"}, nil, ""},
		{"a port that is not a port", []events.Payload{reg}, SetNodeSetting{Node: "novox", Key: "port.store", Value: "68520"}, nil, CodeInvalid},
		{"an address that is not an address", []events.Payload{reg}, SetNodeSetting{Node: "novox", Key: "private-address", Value: "10.1"}, nil, CodeInvalid},
		{"an unknown setting", []events.Payload{reg}, SetNodeSetting{Node: "novox", Key: "colour", Value: "red"}, nil, CodeInvalid},
		{"define", nil, DefineModule{Module: "forge", Spec: webSpec}, []events.Payload{defined}, ""},
		{"define the same again changes nothing", []events.Payload{defined}, DefineModule{Module: "forge", Spec: webSpec}, nil, ""},
		{"define a container with no image", nil, DefineModule{Module: "forge", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web"}}}}, nil, CodeInvalid},
		{"assign", []events.Payload{reg, defined}, AssignModule{Module: "forge", Node: "novox"}, []events.Payload{assigned}, ""},
		{"assign an undefined module", []events.Payload{reg}, AssignModule{Module: "forge", Node: "novox"}, nil, CodeModuleUnknown},
		{"assign to an unknown node", []events.Payload{defined}, AssignModule{Module: "forge", Node: "novox"}, nil, CodeNodeUnknown},
		{"assign twice", []events.Payload{reg, defined, assigned}, AssignModule{Module: "forge", Node: "novox"}, nil, CodeAlreadyAssigned},
		{"release", []events.Payload{reg, defined, assigned}, ReleaseModule{Module: "forge", Node: "novox"},
			[]events.Payload{events.ModuleReleased{Module: "forge", Node: "novox"}}, ""},
		{"release what is not assigned", []events.Payload{reg, defined}, ReleaseModule{Module: "forge", Node: "novox"}, nil, CodeNotAssigned},
		{"take on an adopted node", []events.Payload{reg, adopted, defined, assigned}, TakeModule{Module: "forge", Node: "novox"},
			[]events.Payload{events.ModuleTaken{Module: "forge", Node: "novox"}}, ""},
		{"take on a node that was not adopted", []events.Payload{reg, defined, assigned}, TakeModule{Module: "forge", Node: "novox"}, nil, CodeNotAdopted},
		{"take a module not assigned there", []events.Payload{reg, adopted, defined}, TakeModule{Module: "forge", Node: "novox"}, nil, CodeNotAssigned},
		{"take twice", []events.Payload{reg, adopted, defined, assigned, events.ModuleTaken{Module: "forge", Node: "novox"}},
			TakeModule{Module: "forge", Node: "novox"}, nil, CodeAlreadyTaken},
		{"take after release and re-assign", []events.Payload{reg, adopted, defined, assigned,
			events.ModuleTaken{Module: "forge", Node: "novox"}, events.ModuleReleased{Module: "forge", Node: "novox"}, assigned},
			TakeModule{Module: "forge", Node: "novox"}, []events.Payload{events.ModuleTaken{Module: "forge", Node: "novox"}}, ""},
		{"record an artifact", []events.Payload{defined}, RecordArtifact{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"},
			[]events.Payload{events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"}}, ""},
		{"record an artifact with a bad digest", []events.Payload{defined}, RecordArtifact{Module: "forge", Name: "forge/web", Digest: "ab12"}, nil, CodeInvalid},
		{"record an artifact of an undefined module", nil, RecordArtifact{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"}, nil, CodeModuleUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(given(tt.given...), tt.when)
			if tt.code != "" {
				var r *Rejection
				if !errors.As(err, &r) || r.Code != tt.code || !errors.Is(err, ErrRejected) {
					t.Fatalf("Decide = %v, %v; want rejection %s", got, err, tt.code)
				}
				if got != nil {
					t.Fatalf("a rejection came with events: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if !reflect.DeepEqual(got, tt.then) {
				t.Fatalf("Decide = %#v, want %#v", got, tt.then)
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
