package test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/events/pgstore"
	"meshplane/internal/meshtest"
)

// testController is the test binary run as a controller process (TestMain,
// MESH_TEST_CONTROLLER=1): controllerd.Run on MESH_TEST_DATA and
// MESH_TEST_STORE, the API and the embedded bus on free ports. It prints
// "ready URL" once it serves, and stops on SIGTERM.
func testController() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err := controllerd.Run(ctx, controllerd.Config{
		Data: os.Getenv("MESH_TEST_DATA"), Store: os.Getenv("MESH_TEST_STORE"),
		Listen: "127.0.0.1:0", BusListen: "127.0.0.1:0", Interval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Ready:  func(r controllerd.Ready) { fmt.Printf("ready %s\n", r.APIURL) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// controllerProc is one controller process of a test.
type controllerProc struct {
	cmd    *exec.Cmd
	client *httpapi.Client
	url    string
	log    string

	tokenFile string
}

func startControllerProc(t *testing.T, store string) *controllerProc {
	t.Helper()
	data := t.TempDir()
	p := &controllerProc{log: filepath.Join(data, "controller.log")}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	p.cmd = exec.Command(os.Args[0])
	p.cmd.Env = append(os.Environ(), "MESH_TEST_CONTROLLER=1", "MESH_TEST_DATA="+data, "MESH_TEST_STORE="+store)
	p.cmd.Stderr = logf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- u
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case p.url = <-ready:
	case <-time.After(60 * time.Second):
		b, _ := os.ReadFile(p.log)
		t.Fatalf("controller did not start in 60s:\n%s", b)
	}
	p.tokenFile = filepath.Join(data, httpapi.TokenFile)
	token, err := httpapi.ReadToken(p.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if p.client, err = httpapi.NewClient(p.url, token); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *controllerProc) role(ctx context.Context) string {
	info, err := p.client.Info(ctx)
	if err != nil {
		return "error: " + err.Error()
	}
	return info.Role
}

// TestLeaderFailover runs two controller processes on one PostgreSQL
// database: one leads, the other is a standby that answers reads and
// refuses writes; SIGKILL the leader and the standby leads within 10s, a
// command succeeds, and no declaration was pushed twice for one change.
func TestLeaderFailover(t *testing.T) {
	db := meshtest.PgDatabase(t)
	ctx := context.Background()
	a := startControllerProc(t, db)
	// Alone on the database, it leads from its first answer: it took the
	// free lock before it said it serves (up --once writes at once).
	if r := a.role(ctx); r != api.RoleLeader {
		t.Fatalf("a lone controller, as soon as it serves: role %q, want %q", r, api.RoleLeader)
	}
	b := startControllerProc(t, db)

	var leader, standby *controllerProc
	deadline := time.Now().Add(15 * time.Second)
	for leader == nil {
		ra, rb := a.role(ctx), b.role(ctx)
		switch {
		case ra == api.RoleLeader && rb == api.RoleStandby:
			leader, standby = a, b
		case rb == api.RoleLeader && ra == api.RoleStandby:
			leader, standby = b, a
		case time.Now().After(deadline):
			t.Fatalf("no leader and standby after 15s: roles %q and %q", ra, rb)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}

	code, out, errOut := meshtest.CLI(t, nil, "info", "--server", standby.url, "--token-file", standby.tokenFile)
	if code != meshtest.ExitOK || !regexp.MustCompile(`(?m)^role\s+standby$`).MatchString(out) {
		t.Fatalf("mesh info on the standby: exit %d\n%s%s", code, out, errOut)
	}

	op := "tester"
	if _, err := leader.client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	_, err := standby.client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"c"}})
	var rej *commands.Rejection
	if !errors.As(err, &rej) || rej.Code != api.CodeStandby {
		t.Fatalf("a write to the standby: %v, want a rejection with code %s", err, api.CodeStandby)
	}
	st, err := standby.client.Status(ctx, api.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 2 {
		t.Fatalf("the standby's status shows %d node(s), want the 2 the leader registered", len(st.Nodes))
	}

	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for standby.role(ctx) != api.RoleLeader {
		if time.Since(killed) > 10*time.Second {
			b, _ := os.ReadFile(standby.log)
			t.Fatalf("the standby did not lead within 10s of the leader's SIGKILL:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the standby leads %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	if _, err := standby.client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"c"}}); err != nil {
		t.Fatalf("a command after the failover: %v", err)
	}
	// No acknowledged command is lost: the new leader knows all three.
	if st, err := standby.client.Status(ctx, api.StatusRequest{}); err != nil || len(st.Nodes) != 3 {
		t.Fatalf("the new leader's status: %d node(s), %v; want a, b and c", len(st.Nodes), err)
	}

	// Every push is of a new digest for its node: the new leader pushed
	// again none that the old one had pushed.
	s, err := pgstore.Open(ctx, db, pgstore.WithoutMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	pushes := 0
	for _, ev := range evs {
		if ev.Type != events.TypeDeclarationPushed {
			continue
		}
		var d events.DeclarationPushed
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		key := d.Node + " " + d.Digest
		if seen[key] {
			t.Errorf("declaration %s of node %s pushed twice (position %d)", d.Digest, d.Node, ev.Position)
		}
		seen[key] = true
		pushes++
	}
	if !seen["c "+digestOf(t, seen, "c")] || pushes < 3 {
		t.Fatalf("%d push(es) recorded; want a, b and, after the failover, c", pushes)
	}
}

// digestOf is the digest of node's push in seen ("" if none).
func digestOf(t *testing.T, seen map[string]bool, node string) string {
	t.Helper()
	for k := range seen {
		if n, d, _ := strings.Cut(k, " "); n == node {
			return d
		}
	}
	return ""
}
