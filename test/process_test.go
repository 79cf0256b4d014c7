package test

// Tests with real processes: the mesh binary, built once (go build -o,
// without -race, so the children start fast), run as a controller (mesh up),
// as agents (mesh agent) and as the CLI (MESH_SERVER, MESH_TOKEN), over the
// embedded NATS.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/bus"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
	"meshplane/meshup"
	"meshplane/projections"
)

// TestProcessTwoAgentsInSync: a controller and two agents as processes:
// register (with credentials), define, assign, take, push, apply, and
// `mesh status -o json NODE` says both are in sync.
func TestProcessTwoAgentsInSync(t *testing.T) {
	c := meshtest.StartCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	creds := meshtest.ProcSetUp(t, c, "n1", "n2")
	for _, n := range []string{"n1", "n2"} {
		meshtest.StartAgentProc(t, creds[n], t.TempDir())
	}
	for _, n := range []string{"n1", "n2"} {
		meshtest.MustCLI(t, c.Env(), "push", n)
	}
	meshtest.ProcInSync(t, c.Env(), "n1", "n2")
	for _, n := range []string{"n1", "n2"} {
		st := meshtest.StatusJSON(t, c.Env(), n)
		if st.Applied == nil || st.Pushed == nil || st.Applied.Declaration != st.Pushed.Declaration {
			t.Errorf("%s: applied %+v, pushed %+v: want the pushed declaration applied", n, st.Applied, st.Pushed)
		}
	}
	c.Stop(t)
}

// TestProcessLateReportsRecordedOnce: the controller stopped (SIGTERM)
// while an agent applies on (its drift check) and keeps its reports, then
// restarted on the same addresses: each kept report is recorded exactly
// once, as delivered late.
func TestProcessLateReportsRecordedOnce(t *testing.T) {
	data := t.TempDir()
	apiAt, busAt := freeport.Addr(t), freeport.Addr(t)
	c := meshtest.StartCtl(t, data, apiAt, busAt)
	creds := meshtest.ProcSetUp(t, c, "n1")
	agentData := t.TempDir()
	a := meshtest.StartAgentProc(t, creds["n1"], agentData, "--interval", "200ms")
	meshtest.MustCLI(t, c.Env(), "push", "n1")
	meshtest.ProcInSync(t, c.Env(), "n1")

	c.Stop(t)
	// Several drift applies, kept in the agent's outbox (a record each) while
	// no controller records them: wait for three rather than for a time.
	testwait.Eventually(t, 30*time.Second, func() error {
		c, err := agent.CheckOutbox(filepath.Join(agentData, agentd.OutboxDir))
		if err != nil {
			return err
		}
		if queued := c.Pending; len(queued) < 3 {
			return fmt.Errorf("%d report(s) queued in the agent's outbox, want at least 3", len(queued))
		}
		return nil
	})
	c2 := meshtest.StartCtl(t, data, apiAt, busAt)
	testwait.Eventually(t, 30*time.Second, func() error {
		page, err := c2.Client.Timeline(context.Background(), api.TimelineRequest{Node: "n1", Type: events.TypeReportDeliveredLate, Limit: 1000})
		if err != nil {
			return err
		}
		if len(page.Entries) < 3 {
			return fmt.Errorf("%d late report(s) recorded, want at least 3", len(page.Entries))
		}
		return nil
	})
	a.Stop(t)
	c2.Stop(t)

	applies, lates := map[string]int{}, map[string]int{}
	for _, ev := range meshtest.StoreEvents(t, data) {
		switch ev.Type {
		case events.TypeApplyReported:
			applies[ev.ID.String()]++
		case events.TypeReportDeliveredLate:
			lates[ev.Causation]++
		}
	}
	if len(lates) < 3 {
		t.Fatalf("%d report(s) delivered late, want at least 3", len(lates))
	}
	for id, n := range lates {
		if n != 1 || applies[id] != 1 {
			t.Errorf("apply %s: recorded %d time(s), %d late note(s); want 1 and 1", id, applies[id], n)
		}
	}
	for id, n := range applies {
		if n != 1 {
			t.Errorf("apply %s recorded %d times", id, n)
		}
	}
}

// TestProcessKilledMidPass: the controller killed with SIGKILL while
// commands arrive and nodes are pushed, then restarted: every command the
// API acknowledged before the kill is in the store, and the restarted
// controller's status equals a rebuild from the log (mesh rebuild, then
// status on the local store).
func TestProcessKilledMidPass(t *testing.T) {
	data := t.TempDir()
	apiAt, busAt := freeport.Addr(t), freeport.Addr(t)
	c := meshtest.StartCtl(t, data, apiAt, busAt)
	creds := meshtest.ProcSetUp(t, c, "n1")
	meshtest.StartAgentProc(t, creds["n1"], t.TempDir())

	var (
		mu    sync.Mutex
		acked []string
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				node := fmt.Sprintf("k%d-%d", w, i)
				if _, err := c.Client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "test", Nodes: []string{node}}); err != nil {
					return // the controller is gone
				}
				mu.Lock()
				acked = append(acked, node)
				mu.Unlock()
				_, _ = c.Client.Push(ctx, api.PushRequest{Operator: "test", Node: "n1"})
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	c.Kill()
	wg.Wait()
	cancel()
	mu.Lock()
	if len(acked) == 0 {
		t.Fatal("no command was acknowledged before the kill")
	}
	mu.Unlock()

	// The restarted controller's projections, once it appends nothing more
	// (its first pass composes and pushes the nodes the kill left unpushed).
	c2 := meshtest.StartCtl(t, data, apiAt, busAt)
	var remote api.StatusResponse
	testwait.Eventually(t, 30*time.Second, func() error {
		ctx := context.Background()
		before, err := c2.Client.Info(ctx)
		if err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		if remote, err = c2.Client.Status(ctx, api.StatusRequest{}); err != nil {
			return err
		}
		after, err := c2.Client.Info(ctx)
		if err != nil {
			return err
		}
		if after.StoreHead != before.StoreHead {
			return fmt.Errorf("the store still grows: %d to %d", before.StoreHead, after.StoreHead)
		}
		return nil
	})
	c2.Stop(t)

	registered := map[string]bool{}
	for _, ev := range meshtest.StoreEvents(t, data) {
		if ev.Type == events.TypeNodeRegistered {
			registered[strings.TrimPrefix(ev.Stream, "node-")] = true
		}
	}
	for _, n := range acked {
		if !registered[n] {
			t.Errorf("node %s: registration acknowledged before the kill, not in the store after", n)
		}
	}

	meshtest.MustCLI(t, nil, "rebuild", "--data", data)
	var local []api.NodeStatus
	if err := json.Unmarshal([]byte(meshtest.MustCLI(t, nil, "status", "-o", "json", "--data", data)), &local); err != nil {
		t.Fatal(err)
	}
	if len(remote.Nodes) != len(local) {
		t.Fatalf("the restarted controller has %d nodes, a rebuild %d", len(remote.Nodes), len(local))
	}
	for i := range local {
		if got, want := meshtest.Marshal(t, remote.Nodes[i]), meshtest.Marshal(t, local[i]); !bytes.Equal(got, want) {
			t.Errorf("node %s: the restarted controller's status differs from a rebuild's:\ncontroller %s\nrebuild    %s", local[i].Node, got, want)
		}
	}
}

// TestProcessOtherNodesCreds: with n2's credentials, a client of the bus
// can neither read n1's declaration nor publish n1's report, and nothing
// reaches the store.
func TestProcessOtherNodesCreds(t *testing.T) {
	c := meshtest.StartCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	creds := meshtest.ProcSetUp(t, c, "n1", "n2")
	meshtest.MustCLI(t, c.Env(), "push", "n1")
	cr, err := bus.LoadCreds(creds["n2"])
	if err != nil {
		t.Fatal(err)
	}
	js := meshtest.DialAsNode(t, cr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := meshtest.StoreHead(t, ctx, c.Client)
	meshtest.CheckOtherNodeRefused(t, ctx, js, "n2", "n1")
	time.Sleep(200 * time.Millisecond) // what was published would be recorded by now
	meshtest.CheckStoreStill(t, ctx, c.Client, before)
	c.Stop(t)
}

// TestProcessAPIToken: a request without the token gets 401 and appends
// nothing; the CLI without MESH_TOKEN is refused.
func TestProcessAPIToken(t *testing.T) {
	c := meshtest.StartCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	ctx := context.Background()
	before := meshtest.StoreHead(t, ctx, c.Client)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/status", ""},
		{"POST", "/v1/nodes", `{"operator":"x","nodes":["intruder"]}`},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, c.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", resp.StatusCode)
			}
		})
	}
	env := []string{"MESH_SERVER=" + c.URL, "MESH_TOKEN=" + strings.Repeat("0", 64)}
	if code, out, errOut := meshtest.CLI(t, env, "node", "register", "intruder"); code == meshtest.ExitOK {
		t.Errorf("node register with a wrong token: exit 0\n%s%s", out, errOut)
	}
	meshtest.CheckStoreStill(t, ctx, c.Client, before)
	c.Stop(t)
}

// TestProcessUpOnce: `mesh up --once` on the example mesh starts the
// controller and one agent process per node, and exits 0 with every node's
// report recorded; run again, it finds the set-up done and still exits 0.
func TestProcessUpOnce(t *testing.T) {
	data := t.TempDir()
	for _, run := range []string{"first", "again"} {
		code, out, errOut := meshtest.CLI(t, nil, "up", "--once", "--data", data, "--listen", "127.0.0.1:0", "--bus-listen", "127.0.0.1:0",
			"--modules", "../examples/modules", "--mesh", "../examples/mesh.yaml")
		if code != meshtest.ExitOK {
			t.Fatalf("%s: exit %d\n%s%s", run, code, out, errOut)
		}
		for _, want := range []string{"novox    sync in-sync", "g14      sync in-sync", "applied novox/", "applied g14/"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output does not say %q:\n%s", run, want, out)
			}
		}
		if run == "again" && !strings.Contains(out, "found their work already done") {
			t.Errorf("again: the set-up was not found done:\n%s", out)
		}
		if _, err := controller.ReadInfo(data); !errors.Is(err, controller.ErrNoController) {
			t.Errorf("%s: after exit, controller.json: %v", run, err)
		}
	}
	for _, n := range []string{"novox", "g14"} {
		if _, err := os.Stat(filepath.Join(data, meshup.AgentsDir, n, meshup.LogFile)); err != nil {
			t.Errorf("agent %s: %v", n, err)
		}
	}
	// The found directory reached novox's simulated runtime: its apply
	// holds route-proxy's resources for take.
	var st []api.NodeStatus
	if err := json.Unmarshal([]byte(meshtest.MustCLI(t, nil, "status", "-o", "json", "--data", data, "novox")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || len(st[0].Held) == 0 || st[0].Held[0].Module != "route-proxy" {
		t.Errorf("novox holds %+v, want route-proxy's found resources held", st)
	}
}

// TestProcessAgentDocker: `mesh agent --runtime docker` against the engine
// at DOCKER_HOST (or the default socket): a module of a directory and a
// file is applied under --docker-root, and the node reports in sync. Without
// an engine the test is skipped, loudly; in CI it fails.
func TestProcessAgentDocker(t *testing.T) {
	meshtest.NeedEngine(t)
	c := meshtest.StartCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	env := c.Env()
	creds := filepath.Join(t.TempDir(), "d1.creds")
	meshtest.MustCLI(t, env, "node", "register", "d1", "--creds", creds)
	mod := filepath.Join(t.TempDir(), "notes.yaml")
	if err := os.WriteFile(mod, []byte("module: notes\ndirectories:\n  - {path: /var/lib/notes, mode: \"0750\"}\nfiles:\n  - path: /etc/notes/app.ini\n    mode: \"0640\"\n    content: \"hello\\n\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	meshtest.MustCLI(t, env, "module", "define", mod)
	meshtest.MustCLI(t, env, "assign", "notes", "d1")
	root := t.TempDir()
	meshtest.StartProc(t, []string{"MESH_SERVER=", "MESH_TOKEN="}, "agent", "--creds", creds, "--data", t.TempDir(), "--runtime", "docker", "--docker-root", root)
	meshtest.MustCLI(t, env, "push", "d1")
	meshtest.ProcInSync(t, env, "d1")
	b, err := os.ReadFile(filepath.Join(root, "etc/notes/app.ini"))
	if err != nil || string(b) != "hello\n" {
		t.Errorf("the file under --docker-root: %q, %v; want %q", b, err, "hello\n")
	}
	if st, err := os.Stat(filepath.Join(root, "var/lib/notes")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
		t.Errorf("the directory under --docker-root: %v, %v; want a directory of mode 0750", st, err)
	}
	if st := meshtest.StatusJSON(t, env, "d1"); st.Health != projections.HealthConverged {
		t.Errorf("d1 health %q, want %q", st.Health, projections.HealthConverged)
	}
	c.Stop(t)
}
