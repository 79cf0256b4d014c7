package meshup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/agent"
	"meshplane/artifacts/imagebuild"
)

// TestDataID: a data directory's id is made once, written only when save
// is called (a set-up refused on a fresh directory leaves nothing), and
// read back the same ever after; a damaged one is an error saying so.
func TestDataID(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	id, save, err := DataID(data)
	if err != nil || len(id) != 16 {
		t.Fatalf("dataID = %q, %v", id, err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("dataID made %s before save (%v)", data, err)
	}
	if got, err := save(); err != nil || got != id {
		t.Fatalf("save = %q, %v; want %q", got, err, id)
	}
	again, save2, err := DataID(data)
	if err != nil || again != id {
		t.Fatalf("read back %q, %v; want %q", again, err, id)
	}
	if got, err := save2(); err != nil || got != id {
		t.Fatalf("save again = %q, %v", got, err)
	}
	// Another up that made its own id meanwhile: the one written is kept.
	other := filepath.Join(t.TempDir(), "other")
	_, saveA, _ := DataID(other)
	idB, saveB, _ := DataID(other)
	if _, err := saveB(); err != nil {
		t.Fatal(err)
	}
	if got, err := saveA(); err != nil || got != idB {
		t.Errorf("the second save = %q, %v; want the first written, %q", got, err, idB)
	}
	if err := os.WriteFile(filepath.Join(data, DataIDFile), []byte("not an id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := DataID(data); err == nil || !strings.Contains(err.Error(), "not a data directory's id") {
		t.Errorf("a damaged id: %v", err)
	}
}

// TestDockerCleanupNamesTheDataDirectory: every command up prints as the
// clean-up filters by the data directory's id too, never by the node or
// the program alone (which would reach another data directory's on a
// shared engine).
func TestDockerCleanupNamesTheDataDirectory(t *testing.T) {
	const id = "0123456789abcdef"
	out := DockerCleanup([]string{"local", "edge"}, id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 2 per node and the images:\n%s", len(lines), out)
	}
	for _, l := range lines {
		cmds := strings.Split(l, "    (")[0]
		for _, c := range strings.Split(cmds, ";") {
			for _, dc := range strings.Split(c, "$(") {
				if strings.TrimSpace(dc) == "docker rm -f" {
					continue // what $(docker ps ...) names
				}
				if strings.Contains(dc, "docker ") && !strings.Contains(dc, "--filter label="+agent.LabelData+"="+id) {
					t.Errorf("%q does not filter by the data directory's id", dc)
				}
			}
		}
	}
	if strings.Contains(out, "--filter label="+imagebuild.LabelProgram) {
		t.Errorf("the clean-up still filters by %s, every meshplane image on the engine:\n%s", imagebuild.LabelProgram, out)
	}
}
