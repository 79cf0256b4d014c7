package httpapi_test

import (
	"fmt"
	"reflect"
	"testing"

	"meshplane/api"
	"meshplane/events"
)

// TestRevertOverHTTP: a revert through the client is the controller's:
// the same result, and the events it appended; again, nothing.
func TestRevertOverHTTP(t *testing.T) {
	e := newEnv(t)
	setup(t, e.ctx, e.client)
	op := "tester"
	at := e.head(t)
	v2 := module("forge")
	v2.Spec.Containers[0].Env = map[string]string{"V": "2"}
	must(e.client.DefineModules(e.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{v2}}))(t)
	to := api.RevertRequest{Operator: op, Module: "forge", To: fmt.Sprint(at)} // forge as first defined
	res := must(e.client.Revert(e.ctx, to))(t)
	if res.Module != "forge" || res.To != to.To || res.Position == 0 || res.Position > at || len(res.Events) != 1 || res.Events[0].Type != events.TypeModuleDefined || res.Events[0].Position <= at {
		t.Fatalf("revert over HTTP: %+v", res)
	}
	again := must(e.client.Revert(e.ctx, to))(t)
	local := must(e.ctrl.Revert(e.ctx, to))(t)
	if len(again.Events) != 0 || !reflect.DeepEqual(again, local) || again.SpecDigest != res.SpecDigest {
		t.Errorf("again over HTTP %+v, on the controller %+v", again, local)
	}
}
