package render

import (
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/events"
)

// TestEventLineSaysWhatHappened: a write verb's line says what happened
// in words first, then the event as the store names it; every registered
// event type has its words.
func TestEventLineSaysWhatHappened(t *testing.T) {
	for ev, want := range map[api.EventRef]string{
		{Stream: "module-greeter", Position: 8, Type: events.TypeModuleDefined}:    "defined module greeter (module-greeter #8 module.defined)",
		{Stream: "node-novox", Position: 12, Type: events.TypeModuleAssigned}:      "assigned a module to node novox (node-novox #12 module.assigned)",
		{Stream: "token-alice", Position: 3, Type: events.TypeTokenCreated}:        "created an API token for operator alice (token-alice #3 token.created)",
		{Stream: events.RosterStream, Position: 9, Type: events.TypeRosterChanged}: "changed the roster (mesh-roster #9 roster.changed)",
		{Stream: "node-novox", Position: 4, Type: "node.renamed"}:                  "recorded node.renamed on node novox (node-novox #4 node.renamed)",
	} {
		if got := EventLine(ev); got != want {
			t.Errorf("EventLine(%+v):\n%s\nwant\n%s", ev, got, want)
		}
	}
	for _, typ := range events.NewRegistry().Types() {
		if _, ok := eventWords[typ]; !ok {
			t.Errorf("event type %s has no words (eventWords)", typ)
		}
	}
	if got := EventLine(api.EventRef{Stream: "node-n1", Position: 1, Type: events.TypeNodeRegistered}); !strings.HasPrefix(got, "registered node n1 ") {
		t.Errorf("EventLine: %s", got)
	}
}
