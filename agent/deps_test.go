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
// Every package under agent/ is held to it but agent/agentd, the agent
// process's assembly, which is where the bus is dialled. (Joining and
// installing, clients of the controller's API, are host/join and
// host/install, outside agent/.)
func TestAgentLinksNoWriteSide(t *testing.T) {
	pkgs, err := exec.Command("go", "list", "meshplane/agent/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, pkgs)
	}
	args := []string{"list", "-deps"}
	for _, p := range strings.Fields(string(pkgs)) {
		if p != "meshplane/agent/agentd" {
			args = append(args, p)
		}
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "meshplane/commands" || dep == "meshplane/bus" || strings.Contains(dep, "nats") || strings.Contains(dep, "yaml") {
			t.Errorf("the agent links %s; it must import only meshplane/events and meshplane/declaration", dep)
		}
	}
}
