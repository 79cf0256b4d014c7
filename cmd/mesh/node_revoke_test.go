package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"meshplane/bus"
	"meshplane/controllerd"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// TestNodeRevokeUnrecordedCreds: credentials minted without their key
// recorded (as node register --creds did before node.credentials-issued,
// here controllerd.RegisterCreds, which records nothing) are unknown to
// history, so node revoke alone leaves them working; node revoke --creds
// FILE records the key as the node's and revokes it: the agent's
// connection is closed and a new one refused. --creds of another node's
// file is refused.
func TestNodeRevokeUnrecordedCreds(t *testing.T) {
	data := t.TempDir()
	busAt := freeport.Addr(t)
	c := meshtest.StartCtl(t, data, freeport.Addr(t), busAt)
	defer c.Stop(t)
	env := c.Env()
	urls := []string{"nats://" + busAt}
	creds := filepath.Join(t.TempDir(), "n1.creds")
	if err := controllerd.RegisterCreds(data, "n1", creds, urls, nil); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "n2.creds")
	if err := controllerd.RegisterCreds(data, "n2", other, urls, nil); err != nil {
		t.Fatal(err)
	}
	_, pub, err := bus.CredsUser(creds)
	if err != nil {
		t.Fatal(err)
	}
	meshtest.MustCLI(t, env, "node", "register", "n1")
	agent := meshtest.StartAgentProc(t, creds, t.TempDir())
	meshtest.MustCLI(t, env, "push", "n1")
	meshtest.ProcInSync(t, env, "n1")

	if out := meshtest.MustCLI(t, env, "node", "revoke", "n1"); !strings.Contains(out, "no bus user left to revoke") {
		t.Fatalf("node revoke n1 with nothing recorded printed %q", out)
	}
	if code, out, errOut := meshtest.CLI(t, env, "node", "revoke", "n1", "--creds", other); code != exitUsage || !strings.Contains(errOut, "n2's, not n1's") {
		t.Errorf("node revoke n1 --creds n2's file: exit %d\n%s%s; want usage naming the node", code, out, errOut)
	}

	u, err := bus.LoadCreds(creds)
	if err != nil {
		t.Fatal(err)
	}
	closed, said := make(chan struct{}), make(chan error, 8)
	nc, err := nats.Connect(urls[0], nats.UserJWTAndSeed(u.JWT, u.Seed), nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case said <- err:
			default:
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatalf("n1's user cannot connect before the revoke: %v", err)
	}
	defer nc.Close()

	if out := meshtest.MustCLI(t, env, "node", "revoke", "n1", "--creds", creds); out != "revoked "+pub+" of node n1\n" {
		t.Fatalf("node revoke n1 --creds: %q, want the key revoked", out)
	}
	select {
	case <-closed:
		select {
		case err := <-said:
			if !errors.Is(err, nats.ErrAuthRevoked) {
				t.Errorf("n1's connection closed saying %v; want its user revoked", err)
			}
		default:
			t.Error("n1's connection closed without the server saying why")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("n1's connection is still open 10s after node revoke --creds")
	}
	if nc2, err := nats.Connect(urls[0], nats.UserJWTAndSeed(u.JWT, u.Seed), nats.NoReconnect()); err == nil {
		nc2.Close()
		t.Error("n1's revoked user connects again")
	}
	testwait.Eventually(t, 20*time.Second, func() error {
		if o := strings.ToLower(agent.Out.String()); !strings.Contains(o, "revoked") && !strings.Contains(o, "authorization violation") {
			return errors.New("the agent of n1 does not say its user was refused")
		}
		return nil
	})
	if show := meshtest.MustCLI(t, env, "node", "show", "n1"); !strings.Contains(show, pub+"  revoked") {
		t.Errorf("node show n1 does not list %s revoked:\n%s", pub, show)
	}
}
