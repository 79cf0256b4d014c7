package test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"meshplane/bus"
	"meshplane/controller"
	"meshplane/events/pgstore/pgtest"
	"meshplane/internal/atomicfile"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// natsServer is the path of a separately built nats-server (Debian's
// package; scripts/ensure-nats-server.sh installs it), or the test's end:
// a failure under CI=true, a loud skip elsewhere.
func natsServer(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("nats-server")
	if err != nil {
		if pgtest.InCI() {
			t.Fatalf("nats-server is not installed (scripts/ensure-nats-server.sh): %v", err)
		}
		t.Skipf("SKIPPED: no nats-server (apt-get install nats-server, or sh scripts/ensure-nats-server.sh): %v", err)
	}
	return p
}

// TestExternalNATSCluster: three nats-server processes in a cluster, set
// up only as `mesh bus account --help` tells an operator (its fragment
// included in each server's own configuration of listen, cluster and
// JetStream); mesh up --nats against them with the credentials it wrote;
// an agent whose user is minted with the signing key the controller keeps
// reports, and its report is recorded; a host joins with a token (mesh
// agent join: the controller signs its key with that signing key), its
// report is recorded, and mesh node revoke closes its connections on the
// cluster at once and refuses new ones; one server killed (SIGKILL), the
// next push is applied and reported all the same.
func TestExternalNATSCluster(t *testing.T) {
	bin := natsServer(t)
	data := t.TempDir()
	conf := meshtest.MustCLI(t, nil, "bus", "account", "--data", data)
	if !strings.Contains(conf, "operator: ") || !strings.Contains(conf, "resolver_preload") {
		t.Fatalf("mesh bus account printed no server configuration:\n%s", conf)
	}
	accountDir := filepath.Join(data, "bus-account") // cmd/mesh's busAccountDir

	// Three servers: the operator's own blocks, and the fragment.
	clients, routes := make([]string, 3), make([]string, 3)
	for i := range clients {
		clients[i], routes[i] = freeport.Addr(t), freeport.Addr(t)
	}
	srvs := make([]*exec.Cmd, 3)
	done := make([]chan struct{}, 3)
	for i := range srvs {
		dir := t.TempDir()
		var rs []string
		for j, r := range routes {
			if j != i {
				rs = append(rs, "nats-route://"+r)
			}
		}
		cfg := fmt.Sprintf(`listen: %s
server_name: nats-%d
jetstream { store_dir: "./js" }
cluster {
  name: ops
  listen: %s
  routes: [%s]
}
include meshplane.conf
`, clients[i], i, routes[i], strings.Join(rs, ", "))
		// The fragment, copied beside each server's configuration (an
		// include is relative to the file that includes it).
		if err := atomicfile.WriteFile(filepath.Join(dir, "meshplane.conf"), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, "server.conf"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", "server.conf")
		cmd.Dir = dir
		out := &meshtest.LockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		srvs[i], done[i] = cmd, make(chan struct{})
		go func(i int) { _ = cmd.Wait(); close(done[i]) }(i)
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done[i]
			if t.Failed() {
				t.Logf("nats-server %d:\n%s", i, out)
			}
		})
	}
	var urls []string
	for _, c := range clients {
		urls = append(urls, "nats://"+c)
		testwait.Eventually(t, 30*time.Second, func() error {
			conn, err := net.Dial("tcp", c)
			if err == nil {
				conn.Close()
			}
			return err
		})
	}

	// The controller, as the verb's help says.
	ctlData := t.TempDir()
	started := time.Now()
	p := meshtest.StartProc(t, nil, "up", "--data", ctlData, "--listen", "127.0.0.1:0", "--interval", "1h",
		"--nats", strings.Join(urls, ","),
		"--nats-creds", filepath.Join(accountDir, bus.ControllerCredsFile),
		"--nats-account-seed", filepath.Join(accountDir, "signing.nk"),
		"--nats-operator-seed", filepath.Join(accountDir, bus.OperatorSigningFile),
		"--nats-system-creds", filepath.Join(accountDir, bus.SystemCredsFile))
	c := &meshtest.CtlProc{Proc: p, Data: ctlData}
	testwait.Eventually(t, 60*time.Second, func() error {
		select {
		case <-p.Done:
			t.Fatalf("the controller exited: %v\n%s", p.Err, p.Out)
		default:
		}
		info, err := controller.ReadInfo(ctlData)
		if err != nil {
			return err
		}
		if info.PID != p.Cmd.Process.Pid {
			return errors.New("controller.json is another process's")
		}
		c.URL = info.URL
		return nil
	})
	t.Logf("the controller serves on the external cluster %v after its start", time.Since(started).Round(time.Millisecond))
	tok, err := os.ReadFile(filepath.Join(ctlData, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	c.Token = strings.TrimSpace(string(tok))
	env := c.Env()

	// mesh bus check against the cluster, as an operator would run it.
	if code, out, errOut := meshtest.CLI(t, nil, "bus", "check", "--nats", strings.Join(urls, ","),
		"--nats-creds", filepath.Join(accountDir, bus.ControllerCredsFile),
		"--nats-account-seed", filepath.Join(accountDir, "signing.nk")); code != meshtest.ExitOK || strings.Count(out, "\nok  ") != 4 || !strings.HasPrefix(out, "ok  ") {
		t.Fatalf("mesh bus check on the external cluster: exit %d\n%s%s", code, out, errOut)
	} else {
		t.Logf("mesh bus check on the external cluster:\n%s", out)
	}

	// The node's user, minted with the signing key the controller keeps.
	seed, err := os.ReadFile(filepath.Join(accountDir, "signing.nk"))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := os.ReadFile(filepath.Join(accountDir, bus.ControllerCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	cu, err := bus.ParseNATSCreds(cb)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := bus.IssuerFor(seed, cu)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := bus.NewCreds(issuer, "n1", urls, nil)
	if err != nil {
		t.Fatal(err)
	}
	credsFile := filepath.Join(t.TempDir(), "n1.creds")
	if err := bus.WriteCreds(credsFile, nc); err != nil {
		t.Fatal(err)
	}
	meshtest.MustCLI(t, env, "node", "register", "n1")
	meshtest.MustCLI(t, env, "node", "adopt", "n1")
	meshtest.MustCLI(t, env, "module", "define", "../examples/modules/searxng.yaml")
	meshtest.MustCLI(t, env, "assign", "searxng", "n1")
	meshtest.MustCLI(t, env, "take", "searxng", "n1")
	meshtest.StartAgentProc(t, credsFile, t.TempDir())
	meshtest.MustCLI(t, env, "push", "n1")
	meshtest.ProcInSync(t, env, "n1")
	t.Logf("n1's report recorded %v after the controller's start", time.Since(started).Round(time.Millisecond))

	// A host joins with a token, and is revoked.
	externalJoinAndRevoke(t, env, c.URL, urls)

	// One server killed: the bucket and the stream (R3) carry on.
	before := meshtest.StatusJSON(t, env, "n1")
	_ = srvs[0].Process.Kill()
	<-done[0]
	killed := time.Now()
	testwait.Eventually(t, 60*time.Second, func() error {
		code, out, errOut := meshtest.CLI(t, env, "push", "n1")
		if code != meshtest.ExitOK {
			return fmt.Errorf("push: exit %d\n%s%s", code, out, errOut)
		}
		return nil
	})
	testwait.Eventually(t, 60*time.Second, func() error {
		st := meshtest.StatusJSON(t, env, "n1")
		if st.Applied == nil || before.Applied == nil || !st.Applied.At.After(before.Applied.At) {
			return fmt.Errorf("n1: applied %+v, before the kill %+v", st.Applied, before.Applied)
		}
		return nil
	})
	t.Logf("a server killed: n1's next report recorded %v after", time.Since(killed).Round(time.Millisecond))
}

// externalJoinAndRevoke: on the external cluster at urls, with the
// controller at apiURL, node n2 joins with a token (mesh agent join
// --no-start, then mesh agent --data), its report is recorded; then mesh
// node revoke n2: a connection of n2's user made before it is closed
// within seconds (the servers took the account's new revocation list), a
// new one is refused, the agent says so, and its next push is not applied.
func externalJoinAndRevoke(t *testing.T, env []string, apiURL string, urls []string) {
	t.Helper()
	meshtest.MustCLI(t, env, "node", "register", "n2")
	meshtest.MustCLI(t, env, "node", "adopt", "n2")
	meshtest.MustCLI(t, env, "assign", "searxng", "n2")
	meshtest.MustCLI(t, env, "take", "searxng", "n2")
	token := strings.TrimSpace(meshtest.MustCLI(t, env, "node", "join-token", "n2"))
	data := t.TempDir()
	meshtest.MustCLI(t, []string{"MESH_SERVER=", "MESH_TOKEN="}, "agent", "join", apiURL, "--token", token, "--data", data, "--no-start")
	creds, err := bus.LoadCreds(filepath.Join(data, "node.creds"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(creds.URLs, ",") != strings.Join(urls, ",") {
		t.Errorf("n2's credentials name %v, want the cluster's %v", creds.URLs, urls)
	}
	agent := meshtest.StartProc(t, []string{"MESH_SERVER=", "MESH_TOKEN="}, "agent", "--data", data, "--runtime", "sim")
	meshtest.MustCLI(t, env, "push", "n2")
	meshtest.ProcInSync(t, env, "n2")

	// A connection of n2's user, beside the agent's.
	closed := make(chan error, 1)
	nc, err := nats.Connect(strings.Join(urls, ","), nats.UserJWTAndSeed(creds.JWT, creds.Seed),
		nats.NoReconnect(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case closed <- err:
			default:
			}
		}), nats.ClosedHandler(func(c *nats.Conn) {
			select {
			case closed <- c.LastError():
			default:
			}
		}))
	if err != nil {
		t.Fatalf("n2's user cannot connect before the revoke: %v", err)
	}
	defer nc.Close()
	before := meshtest.StatusJSON(t, env, "n2")

	revoked := time.Now()
	out := meshtest.MustCLI(t, env, "node", "revoke", "n2")
	if !strings.HasPrefix(out, "revoked U") {
		t.Errorf("node revoke n2 printed %q", out)
	}
	select {
	case err := <-closed:
		t.Logf("n2's connection closed %v after the revoke: %v", time.Since(revoked).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("n2's connection is still open 10s after node revoke")
	}
	if nc2, err := nats.Connect(strings.Join(urls, ","), nats.UserJWTAndSeed(creds.JWT, creds.Seed), nats.NoReconnect()); err == nil {
		nc2.Close()
		t.Error("n2's revoked user connects again")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authoriz") && !strings.Contains(strings.ToLower(err.Error()), "revoked") {
		t.Errorf("n2's revoked user is refused with %v; want an authorization error", err)
	}
	testwait.Eventually(t, 20*time.Second, func() error {
		if o := strings.ToLower(agent.Out.String()); !strings.Contains(o, "revoked") && !strings.Contains(o, "authorization violation") {
			return errors.New("the agent of n2 does not say its user was refused")
		}
		return nil
	})
	meshtest.MustCLI(t, env, "push", "n2")
	time.Sleep(3 * time.Second)
	if st := meshtest.StatusJSON(t, env, "n2"); st.Applied != nil && before.Applied != nil && st.Applied.At.After(before.Applied.At) {
		t.Errorf("n2 applied a push after its revocation: %+v", st.Applied)
	}
}
