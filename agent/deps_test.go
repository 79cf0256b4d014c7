package agent_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAgentLinksNoWriteSide keeps the node side from linking the controller:
// the agent imports the event vocabulary and the declaration, never
// meshplane/commands (the write side) nor its module-file parser's YAML;
// nor the bus (its transport comes in through Run's Source and Reporter).
func TestAgentLinksNoWriteSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "meshplane/agent/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "meshplane/commands" || dep == "meshplane/bus" || strings.Contains(dep, "nats") || strings.Contains(dep, "yaml") {
			t.Errorf("the agent links %s; it must import only meshplane/events and meshplane/declaration", dep)
		}
	}
}
