package main

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
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/internal/freeport"
	"meshplane/internal/testwait"
	"meshplane/meshup"
	"meshplane/projections"
)

// builtBinary is a mesh binary the process tests run, built on first use
// with its build tags; TestMain removes its directory (removeBinary).
type builtBinary struct {
	tags      string
	once      sync.Once
	dir, path string
	err       error
}

var (
	// meshBinary is the binary as it ships.
	meshBinary = &builtBinary{}
	// panicBin is built with -tags meshplane_panictest, in which
	// MESH_TEST_PANIC=WHERE@FILE makes the goroutine boundary WHERE panic
	// once FILE exists (package safego's inject_panictest.go): the only
	// build that reads it.
	panicBin = &builtBinary{tags: "meshplane_panictest"}
)

// get builds b once and returns its path.
func (b *builtBinary) get(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "mesh-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.dir = dir
		b.path = filepath.Join(dir, "mesh")
		args := []string{"build", "-o", b.path}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build (tags %q): %v\n%s", b.tags, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// binary builds the mesh binary once.
func binary(t testing.TB) string { return meshBinary.get(t) }

// removeBinary removes what binary and panicBinary built.
func removeBinary() {
	for _, b := range []*builtBinary{meshBinary, panicBin} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
}

// lockedBuffer is a bytes.Buffer written by a child process and read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proc is a running mesh process.
type proc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error
}

func startProc(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	return startBinary(t, binary(t), env, args...)
}

// startBinary is startProc of the binary at bin.
func startBinary(t testing.TB, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("%v: %v\n%s", p.cmd.Args, p.err, p.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%v did not stop in 30 s\n%s", p.cmd.Args, p.out)
	}
}

// kill sends SIGKILL and waits.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// ctlProc is a controller process: mesh up --data DATA --listen API
// --bus-listen BUS.
type ctlProc struct {
	*proc
	data, url, token string
	client           *httpapi.Client
}

// startCtl starts a controller on data and waits until it serves (its
// controller.json names it).
func startCtl(t testing.TB, data, apiAt, busAt string, extra ...string) *ctlProc {
	t.Helper()
	p := startProc(t, nil, append([]string{"up", "--data", data, "--listen", apiAt, "--bus-listen", busAt}, extra...)...)
	c := &ctlProc{proc: p, data: data}
	testwait.Eventually(t, 30*time.Second, func() error {
		select {
		case <-p.done:
			t.Fatalf("the controller exited: %v\n%s", p.err, p.out)
		default:
		}
		info, err := controller.ReadInfo(data)
		if err != nil {
			return err
		}
		if info.PID != p.cmd.Process.Pid {
			return errors.New("controller.json is another process's")
		}
		c.url = info.URL
		return nil
	})
	tok, err := httpapi.ReadToken(filepath.Join(data, httpapi.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	c.token = tok
	if c.client, err = httpapi.NewClient(c.url, tok); err != nil {
		t.Fatal(err)
	}
	return c
}

// env is the CLI's environment against c: MESH_SERVER, MESH_TOKEN, and
// MESH_DATA (where node register --creds finds the bus's trust root).
func (c *ctlProc) env() []string {
	return []string{"MESH_SERVER=" + c.url, "MESH_TOKEN=" + c.token, "MESH_DATA=" + c.data}
}

// cli runs the mesh binary to the end.
func cli(t testing.TB, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		code = xe.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, o.String(), e.String()
}

// mustCLI runs the CLI and fails the test unless it exits 0.
func mustCLI(t testing.TB, env []string, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, env, args...)
	if code != exitOK {
		t.Fatalf("mesh %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// statusJSON is `mesh status -o json NODE` through the controller.
func statusJSON(t testing.TB, env []string, node string) api.NodeStatus {
	t.Helper()
	var st []api.NodeStatus
	if err := json.Unmarshal([]byte(mustCLI(t, env, "status", "-o", "json", node)), &st); err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Node != node {
		t.Fatalf("status -o json %s: %+v", node, st)
	}
	return st[0]
}

// procSetUp registers and adopts nodes (with their credentials), defines searxng, and
// assigns and takes it on each, all through the CLI against c; it returns
// each node's credentials file.
func procSetUp(t testing.TB, c *ctlProc, nodes ...string) map[string]string {
	t.Helper()
	env := c.env()
	creds := map[string]string{}
	dir := t.TempDir()
	for _, n := range nodes {
		creds[n] = filepath.Join(dir, n+".creds")
		mustCLI(t, env, "node", "register", n, "--creds", creds[n])
		mustCLI(t, env, "node", "adopt", n)
		if st, err := os.Stat(creds[n]); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("credentials %s: %v, mode %v; want mode 0600", creds[n], err, st.Mode())
		}
	}
	mustCLI(t, env, "module", "define", "../../examples/modules/searxng.yaml")
	for _, n := range nodes {
		mustCLI(t, env, "assign", "searxng", n)
		mustCLI(t, env, "take", "searxng", n)
	}
	return creds
}

// startAgentProc runs `mesh agent --creds FILE --data DIR --runtime sim`.
func startAgentProc(t testing.TB, creds, data string, extra ...string) *proc {
	t.Helper()
	return startProc(t, []string{"MESH_SERVER=", "MESH_TOKEN="},
		append([]string{"agent", "--creds", creds, "--data", data, "--runtime", "sim"}, extra...)...)
}

// procInSync waits until `mesh status -o json NODE` says in sync.
func procInSync(t testing.TB, env []string, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		testwait.Eventually(t, 30*time.Second, func() error {
			if st := statusJSON(t, env, n); st.Sync != projections.SyncInSync {
				return fmt.Errorf("%s: sync %q", n, st.Sync)
			}
			return nil
		})
	}
}

// TestProcessTwoAgentsInSync: a controller and two agents as processes:
// register (with credentials), define, assign, take, push, apply, and
// `mesh status -o json NODE` says both are in sync.
func TestProcessTwoAgentsInSync(t *testing.T) {
	c := startCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	creds := procSetUp(t, c, "n1", "n2")
	for _, n := range []string{"n1", "n2"} {
		startAgentProc(t, creds[n], t.TempDir())
	}
	for _, n := range []string{"n1", "n2"} {
		mustCLI(t, c.env(), "push", n)
	}
	procInSync(t, c.env(), "n1", "n2")
	for _, n := range []string{"n1", "n2"} {
		st := statusJSON(t, c.env(), n)
		if st.Applied == nil || st.Pushed == nil || st.Applied.Declaration != st.Pushed.Declaration {
			t.Errorf("%s: applied %+v, pushed %+v: want the pushed declaration applied", n, st.Applied, st.Pushed)
		}
	}
	c.stop(t)
}

// storeEvents reads every event of a stopped controller's store.
func storeEvents(t testing.TB, data string) []events.Event {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(data, storeurl.File), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestProcessLateReportsRecordedOnce: the controller stopped (SIGTERM)
// while an agent applies on (its drift check) and keeps its reports, then
// restarted on the same addresses: each kept report is recorded exactly
// once, as delivered late.
func TestProcessLateReportsRecordedOnce(t *testing.T) {
	data := t.TempDir()
	apiAt, busAt := freeport.Addr(t), freeport.Addr(t)
	c := startCtl(t, data, apiAt, busAt)
	creds := procSetUp(t, c, "n1")
	agentData := t.TempDir()
	a := startAgentProc(t, creds["n1"], agentData, "--interval", "200ms")
	mustCLI(t, c.env(), "push", "n1")
	procInSync(t, c.env(), "n1")

	c.stop(t)
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
	c2 := startCtl(t, data, apiAt, busAt)
	testwait.Eventually(t, 30*time.Second, func() error {
		page, err := c2.client.Timeline(context.Background(), api.TimelineRequest{Node: "n1", Type: events.TypeReportDeliveredLate, Limit: 1000})
		if err != nil {
			return err
		}
		if len(page.Entries) < 3 {
			return fmt.Errorf("%d late report(s) recorded, want at least 3", len(page.Entries))
		}
		return nil
	})
	a.stop(t)
	c2.stop(t)

	applies, lates := map[string]int{}, map[string]int{}
	for _, ev := range storeEvents(t, data) {
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
	c := startCtl(t, data, apiAt, busAt)
	creds := procSetUp(t, c, "n1")
	startAgentProc(t, creds["n1"], t.TempDir())

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
				if _, err := c.client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "test", Nodes: []string{node}}); err != nil {
					return // the controller is gone
				}
				mu.Lock()
				acked = append(acked, node)
				mu.Unlock()
				_, _ = c.client.Push(ctx, api.PushRequest{Operator: "test", Node: "n1"})
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	c.kill()
	wg.Wait()
	cancel()
	mu.Lock()
	if len(acked) == 0 {
		t.Fatal("no command was acknowledged before the kill")
	}
	mu.Unlock()

	// The restarted controller's projections, once it appends nothing more
	// (its first pass composes and pushes the nodes the kill left unpushed).
	c2 := startCtl(t, data, apiAt, busAt)
	var remote api.StatusResponse
	testwait.Eventually(t, 30*time.Second, func() error {
		ctx := context.Background()
		before, err := c2.client.Info(ctx)
		if err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		if remote, err = c2.client.Status(ctx, api.StatusRequest{}); err != nil {
			return err
		}
		after, err := c2.client.Info(ctx)
		if err != nil {
			return err
		}
		if after.StoreHead != before.StoreHead {
			return fmt.Errorf("the store still grows: %d to %d", before.StoreHead, after.StoreHead)
		}
		return nil
	})
	c2.stop(t)

	registered := map[string]bool{}
	for _, ev := range storeEvents(t, data) {
		if ev.Type == events.TypeNodeRegistered {
			registered[strings.TrimPrefix(ev.Stream, "node-")] = true
		}
	}
	for _, n := range acked {
		if !registered[n] {
			t.Errorf("node %s: registration acknowledged before the kill, not in the store after", n)
		}
	}

	mustCLI(t, nil, "rebuild", "--data", data)
	var local []api.NodeStatus
	if err := json.Unmarshal([]byte(mustCLI(t, nil, "status", "-o", "json", "--data", data)), &local); err != nil {
		t.Fatal(err)
	}
	if len(remote.Nodes) != len(local) {
		t.Fatalf("the restarted controller has %d nodes, a rebuild %d", len(remote.Nodes), len(local))
	}
	for i := range local {
		if got, want := marshal(t, remote.Nodes[i]), marshal(t, local[i]); !bytes.Equal(got, want) {
			t.Errorf("node %s: the restarted controller's status differs from a rebuild's:\ncontroller %s\nrebuild    %s", local[i].Node, got, want)
		}
	}
}

// TestProcessOtherNodesCreds: with n2's credentials, a client of the bus
// can neither read n1's declaration nor publish n1's report, and nothing
// reaches the store.
func TestProcessOtherNodesCreds(t *testing.T) {
	c := startCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	creds := procSetUp(t, c, "n1", "n2")
	mustCLI(t, c.env(), "push", "n1")
	cr, err := bus.LoadCreds(creds["n2"])
	if err != nil {
		t.Fatal(err)
	}
	js := dialAsNode(t, cr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := storeHead(t, ctx, c.client)
	checkOtherNodeRefused(t, ctx, js, "n2", "n1")
	time.Sleep(200 * time.Millisecond) // what was published would be recorded by now
	checkStoreStill(t, ctx, c.client, before)
	c.stop(t)
}

// TestProcessAPIToken: a request without the token gets 401 and appends
// nothing; the CLI without MESH_TOKEN is refused.
func TestProcessAPIToken(t *testing.T) {
	c := startCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	ctx := context.Background()
	before := storeHead(t, ctx, c.client)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/status", ""},
		{"POST", "/v1/nodes", `{"operator":"x","nodes":["intruder"]}`},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, c.url+tc.path, strings.NewReader(tc.body))
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
	env := []string{"MESH_SERVER=" + c.url, "MESH_TOKEN=" + strings.Repeat("0", 64)}
	if code, out, errOut := cli(t, env, "node", "register", "intruder"); code == exitOK {
		t.Errorf("node register with a wrong token: exit 0\n%s%s", out, errOut)
	}
	checkStoreStill(t, ctx, c.client, before)
	c.stop(t)
}

// TestProcessUpOnce: `mesh up --once` on the example mesh starts the
// controller and one agent process per node, and exits 0 with every node's
// report recorded; run again, it finds the set-up done and still exits 0.
func TestProcessUpOnce(t *testing.T) {
	data := t.TempDir()
	for _, run := range []string{"first", "again"} {
		code, out, errOut := cli(t, nil, "up", "--once", "--data", data, "--listen", "127.0.0.1:0", "--bus-listen", "127.0.0.1:0",
			"--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
		if code != exitOK {
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
	if err := json.Unmarshal([]byte(mustCLI(t, nil, "status", "-o", "json", "--data", data, "novox")), &st); err != nil {
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
	needEngine(t)
	c := startCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t))
	env := c.env()
	creds := filepath.Join(t.TempDir(), "d1.creds")
	mustCLI(t, env, "node", "register", "d1", "--creds", creds)
	mod := filepath.Join(t.TempDir(), "notes.yaml")
	if err := os.WriteFile(mod, []byte("module: notes\ndirectories:\n  - {path: /var/lib/notes, mode: \"0750\"}\nfiles:\n  - path: /etc/notes/app.ini\n    mode: \"0640\"\n    content: \"hello\\n\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, env, "module", "define", mod)
	mustCLI(t, env, "assign", "notes", "d1")
	root := t.TempDir()
	startProc(t, []string{"MESH_SERVER=", "MESH_TOKEN="}, "agent", "--creds", creds, "--data", t.TempDir(), "--runtime", "docker", "--docker-root", root)
	mustCLI(t, env, "push", "d1")
	procInSync(t, env, "d1")
	b, err := os.ReadFile(filepath.Join(root, "etc/notes/app.ini"))
	if err != nil || string(b) != "hello\n" {
		t.Errorf("the file under --docker-root: %q, %v; want %q", b, err, "hello\n")
	}
	if st, err := os.Stat(filepath.Join(root, "var/lib/notes")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
		t.Errorf("the directory under --docker-root: %v, %v; want a directory of mode 0750", st, err)
	}
	if st := statusJSON(t, env, "d1"); st.Health != projections.HealthConverged {
		t.Errorf("d1 health %q, want %q", st.Health, projections.HealthConverged)
	}
	c.stop(t)
}
