// Package natstest runs the embedded bus for tests: a real nats-server with
// JetStream, on a free loopback port, its files in the test's temporary
// directory, shut down when the test ends.
package natstest

import (
	"context"
	"testing"
	"time"

	"meshplane/bus"
)

// Start starts an embedded bus for t. edit, if given, changes the
// configuration first (Dir and Listen are set already: a fresh temporary
// directory, 127.0.0.1:-1).
func Start(t testing.TB, edit ...func(*bus.ServerConfig)) *bus.Server {
	t.Helper()
	cfg := bus.ServerConfig{Dir: t.TempDir(), Listen: "127.0.0.1:-1"}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := bus.StartServer(cfg)
	if err != nil {
		t.Fatalf("natstest: start the embedded bus: %v", err)
	}
	t.Cleanup(func() { Stop(t, s) })
	return s
}

// Stop shuts s down, failing t if it takes more than 10 s. Stopping a
// stopped server is a no-op.
func Stop(t testing.TB, s *bus.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("natstest: %v", err)
	}
}

// Controller dials s as the controller, closed when the test ends.
func Controller(t testing.TB, s *bus.Server) *bus.ControllerConn {
	t.Helper()
	cfg, err := s.Controller(nil)
	if err != nil {
		t.Fatalf("natstest: controller user: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := bus.DialController(ctx, cfg)
	if err != nil {
		t.Fatalf("natstest: dial controller: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Creds mints node's credentials for s.
func Creds(t testing.TB, s *bus.Server, node string) bus.Creds {
	t.Helper()
	c, err := bus.NewCreds(s.Authority().Issuer(), node, []string{s.URL()}, nil)
	if err != nil {
		t.Fatalf("natstest: creds for %s: %v", node, err)
	}
	return c
}

// Node dials s as node, closed when the test ends.
func Node(t testing.TB, s *bus.Server, node string) *bus.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := bus.DialNode(ctx, Creds(t, s, node), bus.NodeOptions{})
	if err != nil {
		t.Fatalf("natstest: dial node %s: %v", node, err)
	}
	t.Cleanup(n.Close)
	return n
}
