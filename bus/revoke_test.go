package bus_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"meshplane/bus"
)

// hostUser is what a joining host does: it makes its own user key, and
// the controller signs a JWT for its public key alone.
func hostUser(t *testing.T, s *bus.Server, node string) (pub string, u bus.User) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ = kp.PublicKey()
	seed, _ := kp.Seed()
	tok, err := s.Authority().Issuer().NodeFor(node, pub)
	if err != nil {
		t.Fatal(err)
	}
	return pub, bus.User{JWT: tok, Seed: string(seed)}
}

func connectAs(url string, u bus.User, opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(url, append([]nats.Option{nats.UserJWTAndSeed(u.JWT, u.Seed), nats.NoReconnect(), nats.Timeout(5 * time.Second)}, opts...)...)
}

// TestRevokeClosesAndRefuses: a node's user, connected with a key made
// on its host, is revoked: its connection is closed at once and a
// reconnection is refused, on this start and on the next (the list comes
// with the configuration, from history); a new key of the same node
// connects.
func TestRevokeClosesAndRefuses(t *testing.T) {
	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	s, err := bus.StartServer(bus.ServerConfig{Dir: dir, Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer s.Shutdown(ctx)

	pub, u := hostUser(t, s, "n4")
	if got, err := bus.UserPublicKey(u.JWT); err != nil || got != pub {
		t.Fatalf("UserPublicKey = %q, %v; want %s", got, err, pub)
	}
	closed := make(chan struct{})
	nc, err := connectAs(s.URL(), u, nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatalf("the node's user does not connect before the revoke: %v", err)
	}
	defer nc.Close()
	if err := nc.Publish("mesh.report.n4", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	revoked := map[string]time.Time{pub: time.Now()}
	if err := s.Revoke(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the revoked user's connection is still open 5s after the revoke")
	}
	if _, err := connectAs(s.URL(), u); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("the revoked user reconnects: %v; want an authorization violation", err)
	}
	_, u2 := hostUser(t, s, "n4")
	nc2, err := connectAs(s.URL(), u2)
	if err != nil {
		t.Fatalf("a new key of the node does not connect after the revoke: %v", err)
	}
	nc2.Close()

	// A restart with history's list keeps the old key out.
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := bus.StartServer(bus.ServerConfig{Dir: dir, Listen: listen, Revoked: revoked})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown(ctx)
	if _, err := connectAs(s2.URL(), u); err == nil {
		t.Fatal("the revoked user connects after a restart")
	}
	nc3, err := connectAs(s2.URL(), u2)
	if err != nil {
		t.Fatalf("the new key does not connect after a restart: %v", err)
	}
	nc3.Close()
}

func TestNodeForRefusesWhatIsNotAUserKey(t *testing.T) {
	s, err := bus.StartServer(bus.ServerConfig{Dir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if _, err := s.Authority().Issuer().NodeFor("n4", s.Authority().AccountPublicKey()); !errors.Is(err, bus.ErrNotUserKey) {
		t.Fatalf("NodeFor(an account key) = %v; want ErrNotUserKey", err)
	}
}

func TestOpenAuthorityMakesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := bus.OpenAuthority(dir); !errors.Is(err, bus.ErrNoAuthority) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("OpenAuthority(empty) = %v; want ErrNoAuthority naming %s", err, dir)
	}
	a, err := bus.LoadAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.OpenAuthority(dir)
	if err != nil || b.AccountPublicKey() != a.AccountPublicKey() {
		t.Fatalf("OpenAuthority after LoadAuthority = %v", err)
	}
}
