package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/internal/clihelp"
	"meshplane/projections"
)

// The reference checked in: docs/cli (markdown) and docs/man (man pages),
// from the module's root.
var docsDirs = map[string]string{"--dir": "../../docs/cli", "--man": "../../docs/man"}

// TestDocsCurrent: docs/cli and docs/man are what mesh docs writes from
// today's commands, file for file (go tool task docs, or go test
// ./cmd/mesh -run TestDocsCurrent -update, rewrites them). It also holds
// mesh docs to the same bytes whatever MESH_DATA and MESH_STORE say.
func TestDocsCurrent(t *testing.T) {
	t.Setenv("MESH_DATA", "/somewhere/else")
	t.Setenv("MESH_STORE", "postgres://elsewhere/mesh")
	tmp := t.TempDir()
	fresh := map[string]string{"--dir": filepath.Join(tmp, "cli"), "--man": filepath.Join(tmp, "man")}
	if *update {
		fresh = docsDirs
		for _, d := range docsDirs {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, out, errOut := mesh(t, "docs", "--dir", fresh["--dir"], "--man", fresh["--man"])
	if code != exitOK {
		t.Fatalf("mesh docs: exit %d\n%s%s", code, out, errOut)
	}
	if *update {
		return
	}
	for flag, checked := range docsDirs {
		want, got := readDir(t, checked), readDir(t, fresh[flag])
		if len(got) < 40 {
			t.Fatalf("mesh docs %s wrote %d files, want one a command", flag, len(got))
		}
		for name, g := range got {
			w, ok := want[name]
			switch {
			case !ok:
				t.Errorf("%s has no %s: run go tool task docs", checked, name)
			case w != g:
				t.Errorf("%s/%s is not what mesh docs writes today: run go tool task docs", checked, name)
			}
		}
		for name := range want {
			if _, ok := got[name]; !ok {
				t.Errorf("%s/%s is no command's any more: run go tool task docs", checked, name)
			}
		}
	}
}

// readDir is every file of dir, by name.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestEveryVerbHasAnExample: every verb's help has an Examples section,
// and every entry of examples names a verb.
func TestEveryVerbHasAnExample(t *testing.T) {
	root := (&env{stdout: io.Discard, stderr: io.Discard, now: wallClock}).root()
	var names []string
	for _, v := range clihelp.Verbs(root) {
		name := clihelp.Name(v)
		names = append(names, name)
		if strings.TrimSpace(v.Example) == "" {
			t.Errorf("mesh %s --help has no example (internal/clihelp/examples.go)", name)
		}
	}
	for name := range clihelp.Examples {
		if !slices.Contains(names, name) {
			t.Errorf("internal/clihelp/examples.go has examples for %q, which is no verb", name)
		}
	}
	code, out, _ := mesh(t, "plan", "--help")
	if code != exitOK || !strings.Contains(out, "Examples:\n  mesh plan\n") {
		t.Errorf("mesh plan --help: exit %d, no examples:\n%s", code, out)
	}
}

// TestStatusHelpExplainsStates: mesh status --help says what each sync and
// health value, and a pending module, means.
func TestStatusHelpExplainsStates(t *testing.T) {
	code, out, _ := mesh(t, "status", "--help")
	if code != exitOK {
		t.Fatalf("mesh status --help: exit %d", code)
	}
	for _, state := range []string{
		projections.SyncInSync, projections.SyncPending, projections.SyncUnreported, api.SyncUnreachable,
		projections.HealthChurning, projections.HealthFailing, projections.HealthUnknown, projections.HealthWaitingOnTake, projections.HealthConverged,
	} {
		if !strings.Contains(out, "\n  "+state+" ") {
			t.Errorf("mesh status --help does not explain %s:\n%s", state, out)
		}
	}
	if !strings.Contains(out, "not composed yet") {
		t.Errorf("mesh status --help does not explain a pending module's reasons")
	}
}
