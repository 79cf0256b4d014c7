package wire_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestControllerSideLinksNoAgent: the controller's side reads what a node
// sends through this package (and plans through declaration/nodeplan), so
// none of its packages links the agent, directly or not.
func TestControllerSideLinksNoAgent(t *testing.T) {
	side := []string{
		"meshplane/controller", "meshplane/controllerd", "meshplane/api", "meshplane/bus",
		"meshplane/metrics", "meshplane/projections",
	}
	for _, p := range side {
		out, err := exec.Command("go", "list", "-deps", p).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", p, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "meshplane/agent" || strings.HasPrefix(dep, "meshplane/agent/") {
				t.Errorf("%s links %s; the controller's side imports meshplane/wire and meshplane/declaration/nodeplan, never the agent", p, dep)
			}
		}
	}
}
