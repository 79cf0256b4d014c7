package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/internal/testwait"
)

// startCluster starts n embedded servers routed to each other on
// loopback, sharing the trust root of the first's directory (TrustDir),
// and stops them when the test ends (natstest.Stop: stopping one the test
// stopped is harmless).
func startCluster(t *testing.T, n int, edit func(i int, c *bus.ServerConfig)) []*bus.Server {
	t.Helper()
	trust := t.TempDir()
	if _, err := bus.LoadAuthority(trust); err != nil { // the first controller's seeds
		t.Fatal(err)
	}
	routes := make([]string, n)
	for i := range routes {
		routes[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
	}
	srvs := make([]*bus.Server, n)
	for i := range srvs {
		var peers []string
		for j, r := range routes {
			if j != i {
				peers = append(peers, "nats-route://"+r)
			}
		}
		cfg := bus.ServerConfig{
			Dir: t.TempDir(), TrustDir: trust, Listen: "127.0.0.1:-1",
			Name: fmt.Sprintf("ctl-%d", i), Cluster: routes[i], Peers: peers,
		}
		if testing.Verbose() {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		if edit != nil {
			edit(i, &cfg)
		}
		s, err := bus.StartServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srvs[i] = s
		t.Cleanup(func() { natstest.Stop(t, s) })
	}
	return srvs
}

// allURLs is every server's client URL.
func allURLs(srvs []*bus.Server) []string {
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	return urls
}

// TestCluster: three embedded servers of one trust root route to each
// other; the controller makes the bucket and the stream with three
// replicas; a node connected to one server gets declarations put through
// another and its reports are consumed there; the node's server shut down,
// the node reconnects to another on its own (its credentials name every
// server), its watch goes on, and its next report is recorded.
func TestCluster(t *testing.T) {
	srvs := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Every server learns the others' client URLs (what agents are given).
	testwait.Eventually(t, 20*time.Second, func() error {
		for _, s := range srvs {
			if got := s.URLs(); len(got) != 3 || s.Routes() < 2 {
				return fmt.Errorf("%s: urls %v, %d routes", s.Name(), got, s.Routes())
			}
		}
		return nil
	})
	if u := srvs[0].ClusterURL(); !strings.HasPrefix(u, "nats-route://127.0.0.1:") {
		t.Errorf("ClusterURL %q", u)
	}

	user, err := srvs[0].Authority().Issuer().Controller()
	if err != nil {
		t.Fatal(err)
	}
	cfg := bus.ControllerConnConfig{URLs: allURLs(srvs[:2]), User: user, Replicas: bus.DefaultReplicas(len(srvs))}
	start := time.Now()
	ctl, err := bus.DialControllerWaiting(ctx, cfg, srvs[0].RouteRefused)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	t.Logf("the controller made the bucket and the stream (R3) %v after the servers started", time.Since(start).Round(time.Millisecond))

	t.Run("the bucket and the stream have three replicas", func(t *testing.T) {
		nc, err := nats.Connect(srvs[1].URL(), nats.UserJWTAndSeed(user.JWT, user.Seed))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{bus.ReportsStream, "KV_" + bus.DeclarationsBucket} {
			st, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			info := st.CachedInfo()
			if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
				t.Errorf("stream %s: replicas %d, cluster %+v; want 3 (a leader and two)", name, info.Config.Replicas, info.Cluster)
			}
		}
	})

	creds, err := bus.NewCreds(srvs[0].Authority().Issuer(), "n1", []string{srvs[2].URL(), srvs[1].URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The node dials the third server first (the client shuffles the
	// list; the URLs named first are tried first only without shuffling:
	// what matters is that it reaches one, and any other after).
	n, err := bus.DialNode(ctx, creds, bus.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	w, err := n.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := ctl.PutDeclaration(ctx, decl("n1", 1)); err != nil {
		t.Fatal(err)
	}
	if d := next(t, w); d.ID != "n1/1" {
		t.Fatalf("watch gave %s", d.ID)
	}
	rec := newRecorder()
	consume(t, ctl, rec)
	first := report("n1", "n1/1")
	if _, err := n.PublishReport(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := rec.wait(t); got.ApplyID != first.ApplyID {
		t.Fatalf("recorded %s, want %s", got.ApplyID, first.ApplyID)
	}

	// Shut the node's server down (Shutdown: its clients are told nothing
	// first, but its routes close cleanly; the SIGKILL of a controller and
	// its server is cmd/mesh's TestClusterFailover).
	var nodeSrv *bus.Server
	for _, s := range srvs[1:] {
		if strings.Contains(n.ConnectedURL(), strings.TrimPrefix(s.URL(), "nats://")) {
			nodeSrv = s
		}
	}
	if nodeSrv == nil {
		t.Fatalf("the node is connected to %q: not one of the servers it was given", n.ConnectedURL())
	}
	was := n.ConnectedURL()
	killed := time.Now()
	natstest.Stop(t, nodeSrv)

	// Until the bucket has a leader again (a new election when the
	// stopped server led it), a put fails: the controller's push is then
	// recorded as failed and tried again, as here.
	testwait.Eventually(t, 60*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := ctl.PutDeclaration(pctx, decl("n1", 2))
		return err
	})
	select {
	case d := <-w.Updates():
		if d.ID != "n1/2" {
			t.Fatalf("watch gave %s after its server stopped, want n1/2", d.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not go on within 30s of its server's stop")
	}
	t.Logf("the node's watch went on %v after its server stopped (%s, now %s)", time.Since(killed).Round(time.Millisecond), was, n.ConnectedURL())
	second := report("n1", "n1/2")
	testwait.Eventually(t, 60*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := n.PublishReport(pctx, second)
		return err
	})
	if got := rec.wait(t); got.ApplyID != second.ApplyID {
		t.Fatalf("recorded %s, want %s", got.ApplyID, second.ApplyID)
	}
	rec.mu.Lock()
	c := rec.calls[second.ApplyID]
	rec.mu.Unlock()
	if c != 1 {
		t.Errorf("the second report was handled %d times", c)
	}
}

// TestClusterTrustMismatch: a server started with another trust root
// than its peer's is refused by it, and so is its peer by it: RouteRefused
// says so (ErrTrustMismatch), and a controller waiting on that server for
// JetStream is told, rather than waiting for ever.
func TestClusterTrustMismatch(t *testing.T) {
	other := t.TempDir()
	if _, err := bus.LoadAuthority(other); err != nil {
		t.Fatal(err)
	}
	srvs := startCluster(t, 2, func(i int, c *bus.ServerConfig) {
		if i == 1 {
			c.TrustDir = other
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user, err := srvs[1].Authority().Issuer().Controller()
	if err != nil {
		t.Fatal(err)
	}
	_, err = bus.DialControllerWaiting(ctx, bus.ControllerConnConfig{URLs: []string{srvs[1].URL()}, User: user}, srvs[1].RouteRefused)
	if !errors.Is(err, bus.ErrTrustMismatch) {
		t.Fatalf("a controller on a server of another trust root than its peer's: %v, want ErrTrustMismatch", err)
	}
	t.Logf("refused: %v", err)
	if srvs[0].RouteRefused() == nil {
		t.Error("the peer of the first trust root saw no route refused")
	}
}

// TestTrustDirNeverMade: a trust directory without the seeds is refused,
// naming the seed missing, and nothing is made there.
func TestTrustDirNeverMade(t *testing.T) {
	dir := t.TempDir()
	_, err := bus.StartServer(bus.ServerConfig{Dir: t.TempDir(), TrustDir: dir, Listen: "127.0.0.1:-1"})
	if !errors.Is(err, bus.ErrNoTrust) || !strings.Contains(err.Error(), "operator.nk") {
		t.Fatalf("start with an empty trust directory: %v, want ErrNoTrust naming operator.nk", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the trust directory holds %d file(s) after the refusal, want none", len(ents))
	}
}
