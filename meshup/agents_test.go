package meshup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
)

// logArgs, in a fake agent's script, logs its arguments and MESH_SERVER.
const logArgs = "echo \"args: $*\"\necho \"server: [$MESH_SERVER]\"\n"

// fakeAgent writes a program that runs script with sh.
func fakeAgent(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mesh")
	body := "#!/bin/sh\n" + script + "\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitLog waits until an agent's log holds want.
func waitLog(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want %q", path, b, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStartAgents: one process per node, its credentials registered in
// its directory first, its arguments by runtime (found directories for a
// simulated node; root, prefix and label for one on the engine; the
// artifact store for the node holding it), its output in agent.log, no
// MESH_SERVER inherited; Stop ends them all cleanly.
func TestStartAgents(t *testing.T) {
	t.Setenv("MESH_SERVER", "http://elsewhere")
	mf, err := ParseFile("m.yaml", []byte("nodes:\n  - {name: a, found: [/x, /y]}\n  - {name: b, runtime: docker, artifact-store: 7481}\n"))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	registered := map[string]string{}
	var out bytes.Buffer
	agents, err := StartAgents(AgentsConfig{
		Data: data, DataID: "0123456789abcdef", File: mf,
		Runtimes:  map[string]string{"a": RuntimeSim, "b": RuntimeDocker},
		StoreNode: "b", StoreAt: "127.0.0.1:7481",
		Program: fakeAgent(t, logArgs+"exec sleep 60"),
		Register: func(node, creds string) error {
			registered[node] = creds
			return os.WriteFile(creds, []byte("{}"), 0o600)
		},
		Out: &out,
	})
	if err != nil {
		agents.Stop()
		t.Fatal(err)
	}
	if len(agents) != 2 {
		t.Fatalf("%d agents started, want 2", len(agents))
	}
	dirA, dirB := filepath.Join(data, AgentsDir, "a"), filepath.Join(data, AgentsDir, "b")
	for node, dir := range map[string]string{"a": dirA, "b": dirB} {
		if want := filepath.Join(dir, CredsFile); registered[node] != want {
			t.Errorf("node %s registered at %q, want %q", node, registered[node], want)
		}
	}
	logA := waitLog(t, filepath.Join(dirA, LogFile), "server: [")
	logB := waitLog(t, filepath.Join(dirB, LogFile), "server: [")
	root, err := filepath.Abs(filepath.Join(dirB, DockerRootDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ log, want string }{
		{logA, "args: agent --creds " + filepath.Join(dirA, CredsFile) + " --data " + dirA + " --runtime sim --sim-found /x,/y\n"},
		{logB, "args: agent --creds " + filepath.Join(dirB, CredsFile) + " --data " + dirB + " --runtime docker --docker-root " + root +
			" --docker-prefix b-012345- --docker-label " + agent.LabelData + "=0123456789abcdef --artifact-store 127.0.0.1:7481\n"},
		{logA, "server: []"},
		{logB, "server: []"},
	} {
		if !strings.Contains(c.log, c.want) {
			t.Errorf("agent log %q does not hold %q", c.log, c.want)
		}
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		t.Errorf("docker root %s not made: %v", root, err)
	}
	for _, want := range []string{
		"agent a        pid ", ", runtime sim, log " + filepath.Join(dirA, LogFile) + "\n",
		"agent b        serves the artifact store on 127.0.0.1:7481 (" + filepath.Join(dirB, ArtifactsDir) + ")\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q does not say %q", out.String(), want)
		}
	}
	if err := agents.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	for _, c := range agents {
		if c.ProcessState == nil {
			t.Errorf("agent pid %d not waited for by Stop", c.Process.Pid)
		}
	}
}

// TestStartAgentsFailures: an agent that exits with an error is named by
// Stop; a registration refused stops the start there, returning the agents
// already started; no nodes start nothing.
func TestStartAgentsFailures(t *testing.T) {
	mf, err := ParseFile("m.yaml", []byte("nodes:\n  - {name: a}\n  - {name: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	var out bytes.Buffer
	data := t.TempDir()
	// It ignores SIGTERM (set before it logs): its exit is its own.
	agents, err := StartAgents(AgentsConfig{
		Data: data, File: mf, Runtimes: map[string]string{},
		Program: fakeAgent(t, "trap '' TERM\n"+logArgs+"exit 3"), Out: &out,
		Register: func(node, creds string) error {
			if node == "b" {
				return refused
			}
			return nil
		},
	})
	if !errors.Is(err, refused) || len(agents) != 1 {
		t.Fatalf("StartAgents = %d agents, %v; want 1 and the registration's error", len(agents), err)
	}
	waitLog(t, filepath.Join(data, AgentsDir, "a", LogFile), "server: [")
	if err := agents.Stop(); err == nil || !strings.Contains(err.Error(), "agent pid ") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("stop = %v, want agent pid N: exit status 3", err)
	}

	none, err := StartAgents(AgentsConfig{Program: "/nonexistent"})
	if none != nil || err != nil {
		t.Errorf("no nodes: %v, %v; want nothing", none, err)
	}
	if err := none.Stop(); err != nil {
		t.Errorf("stop of none: %v", err)
	}
}

// TestDockerPrefix: a node's engine names carry the data directory's id
// (two data directories' nodes of one name never want one name); a node an
// older up ran on the engine (its root there, no prefix recorded) keeps
// NODE-, its volumes' and networks' names; the choice is kept.
func TestDockerPrefix(t *testing.T) {
	const id = "0123456789abcdef"
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, dir string)
		want   string
		err    string
	}{
		{name: "new node", want: "local-012345-"},
		{name: "an older up's node", before: func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, DockerRootDir), 0o755); err != nil {
				t.Fatal(err)
			}
		}, want: "local-"},
		{name: "kept", before: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, DockerPrefixFile), []byte("local-abcdef-\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: "local-abcdef-"},
		{name: "not this node's", before: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, DockerPrefixFile), []byte("other-\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, err: "not a prefix of node local's engine names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.before != nil {
				tc.before(t, dir)
			}
			got, err := dockerPrefix(dir, "local", id)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("dockerPrefix: %q, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("dockerPrefix: %q, %v; want %q", got, err, tc.want)
			}
			if again, err := dockerPrefix(dir, "local", "fedcba9876543210"); err != nil || again != tc.want {
				t.Fatalf("dockerPrefix again: %q, %v; want %q kept", again, err, tc.want)
			}
		})
	}
}
