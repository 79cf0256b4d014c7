package agentd

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// simAgent is the agent Run assembles on the simulated runtime over data,
// without the bus: the runtime newRuntime makes, and the outbox in
// data/OutboxDir. Its reports go nowhere (kept in the outbox).
func simAgent(t *testing.T, data string, found ...string) (*agent.Agent, *simruntime.Runtime) {
	t.Helper()
	rt, err := newRuntime(Config{Data: data, Runtime: RuntimeSim, SimFound: found}, "novox", quiet())
	if err != nil {
		t.Fatal(err)
	}
	box, err := agent.OpenOutbox(filepath.Join(data, OutboxDir))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{
		Node: "novox", Runtime: rt, Outbox: box,
		Deliver: func(context.Context, agent.Report) error { return agent.ErrRuntime },
		Now:     time.Now, NewID: uuid.NewV7,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, rt.(*simruntime.Runtime)
}

func restartDecl() declaration.Declaration {
	web := declaration.Container{Image: "registry.invalid/web:1", Mounts: []declaration.Mount{{Source: "/var/lib/web", Target: "/data"}}}
	dir := declaration.Directory{Path: "/var/lib/web", Mode: 0o750}
	ini := declaration.File{Path: "/etc/web/app.ini", Mode: 0o640, Content: "[server]\n"}
	rs := []declaration.Resource{
		{Name: "/etc/web/app.ini", Kind: declaration.KindFile, Module: "web", Digest: declaration.Digest(&ini), File: &ini},
		{Name: "/var/lib/web", Kind: declaration.KindDirectory, Module: "web", Digest: declaration.Digest(&dir), Directory: &dir},
		{Name: "web", Kind: declaration.KindContainer, Module: "web", Digest: declaration.Digest(&web), Container: &web},
	}
	d := declaration.Declaration{Node: "novox", ID: "novox/1", Resources: rs, Hosts: "10.1.0.3 web.mesh\n", Correlation: "c-1"}
	d.Digest = declaration.Digest(rs)
	return d
}

// TestSimulatedAgentRestartRecreatesNothing: an agent on the simulated
// runtime, stopped and started again on the same data directory, finds the
// node as it left it (issue 20: it used to start from an empty node and
// recreate everything, which the churn detector rightly took for a loop):
// the next apply of the same declaration creates, replaces and removes
// nothing, and no container is created twice. A found directory named at
// both starts is found once and kept.
func TestSimulatedAgentRestartRecreatesNothing(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	d := restartDecl()

	a, rt := simAgent(t, data, "/srv/found")
	first, err := a.Apply(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(first.Outcome.Created); got != 3 {
		t.Fatalf("the first apply created %d, want 3: %+v", got, first.Outcome)
	}
	if err := rt.Chmod(ctx, "/srv/found", 0o700); err != nil { // the node's own change, kept too
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, SimStateFile)); err != nil {
		t.Fatalf("no state file in the data directory: %v", err)
	}

	// Restarted: a new runtime and a new agent over the same directory.
	a, rt = simAgent(t, data, "/srv/found")
	again, err := a.Apply(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	o := again.Outcome
	if len(o.Created)+len(o.Replaced)+len(o.Updated)+len(o.Removed)+len(o.Failed) != 0 || o.Unchanged != 3 {
		t.Errorf("the apply after the restart changed something: %+v", o)
	}
	if n := rt.Creates("web"); n != 1 {
		t.Errorf("web was created %d times, want once", n)
	}
	if !rt.Running("web") {
		t.Error("web does not run after the restart")
	}
	if mode, ok := rt.Dir("/srv/found"); !ok || mode != 0o700 {
		t.Errorf("the found directory after the restart: %o %v, want 700 as the node left it", mode, ok)
	}
}

// TestSimulatedAgentPassesOverADamagedState: a state file that does not
// read back is moved aside (kept, not deleted), and the node starts empty.
func TestSimulatedAgentPassesOverADamagedState(t *testing.T) {
	data := t.TempDir()
	path := filepath.Join(data, SimStateFile)
	if err := os.WriteFile(path, []byte("{\"version\": 1}\ncrc32c 00000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rt := simAgent(t, data)
	if names := rt.Names(); len(names) != 0 {
		t.Errorf("a node from a damaged state holds %v", names)
	}
	if b, err := os.ReadFile(path + ".damaged"); err != nil || string(b) != "{\"version\": 1}\ncrc32c 00000000\n" {
		t.Errorf("the damaged file was not moved aside whole: %q %v", b, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no new state file: %v", err)
	}
}
