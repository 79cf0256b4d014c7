package clihelp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsCarryNoDate: the reference WriteMarkdown and WriteMan write has
// no date that changes per run (cobra's "Auto generated ... on DATE" line,
// the man page title's month), so a checked-in copy can be compared with a
// fresh one; there is a file a command, groups included.
func TestDocsCarryNoDate(t *testing.T) {
	dir := t.TempDir()
	md, man := filepath.Join(dir, "md"), filepath.Join(dir, "man")
	if err := WriteMarkdown(tree(), md); err != nil {
		t.Fatal(err)
	}
	if err := WriteMan(tree(), man, ManHeader{Section: "1", Source: "meshplane", Manual: "meshplane manual"}); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string][]string{
		md:  {"mesh.md", "mesh_agent.md", "mesh_agent_join.md", "mesh_node.md", "mesh_node_show.md"},
		man: {"mesh.1", "mesh-agent.1", "mesh-agent-join.1", "mesh-node.1", "mesh-node-show.1"},
	} {
		for _, name := range want {
			b, err := os.ReadFile(filepath.Join(d, name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			s := string(b)
			if strings.Contains(s, "Auto generated") {
				t.Errorf("%s carries cobra's dated line", name)
			}
			if strings.HasSuffix(name, ".1") && !strings.Contains(s, `.TH "MESH`) || strings.Contains(s, `.TH`) && !strings.Contains(s, `" "1" "" "meshplane"`) {
				t.Errorf("%s's title line is not dateless:\n%s", name, s)
			}
		}
	}
}
