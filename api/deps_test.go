package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAPILinksNoWriteSide: the API is the contract both implementations
// keep (the controller, the HTTP client); its rejection and codes are its
// own (rejection.go), so it links no write side, no read side and no
// agent, directly or not.
func TestAPILinksNoWriteSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "meshplane/api").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, side := range []string{"meshplane/commands", "meshplane/projections", "meshplane/controller", "meshplane/agent"} {
			if dep == side || strings.HasPrefix(dep, side+"/") {
				t.Errorf("meshplane/api links %s; it imports only the event vocabulary", dep)
			}
		}
	}
}
