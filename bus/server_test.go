package bus_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/internal/freeport"
	"meshplane/internal/testtls"
)

func freePort(t *testing.T) int {
	t.Helper()
	return freeport.Port(t)
}

// TestRestartKeeps stops the bus and starts it again over the same
// directory: the bucket, the stream and the consumer's place are on disk;
// credentials issued before still work; an agent's watch and a controller's
// consumer that were connected resume on their own.
func TestRestartKeeps(t *testing.T) {
	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg := bus.ServerConfig{Dir: dir, Listen: listen}
	s1, err := bus.StartServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctl := natstest.Controller(t, s1)
	creds := natstest.Creds(t, s1, "n1")
	if _, err := ctl.PutDeclaration(ctx, decl("n1", 1)); err != nil {
		t.Fatal(err)
	}
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
	if d := next(t, w); d.ID != "n1/1" {
		t.Fatalf("watch gave %s", d.ID)
	}
	queued := report("n1", "n1/1") // published with no consumer yet
	if _, err := n.PublishReport(ctx, queued); err != nil {
		t.Fatal(err)
	}

	natstest.Stop(t, s1)
	s2, err := bus.StartServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { natstest.Stop(t, s2) })

	t.Run("a report stored before the restart is consumed after it", func(t *testing.T) {
		rec := newRecorder()
		consume(t, natstest.Controller(t, s2), rec)
		if got := rec.wait(t); got.ApplyID != queued.ApplyID {
			t.Fatalf("recorded %s, want %s", got.ApplyID, queued.ApplyID)
		}
	})
	t.Run("the declaration is kept, and old credentials read it", func(t *testing.T) {
		n2, err := bus.DialNode(ctx, creds, bus.NodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer n2.Close()
		if d, _, err := n2.Latest(ctx); err != nil || d.ID != "n1/1" {
			t.Fatalf("Latest after restart: %s, %v", d.ID, err)
		}
	})
	t.Run("the watch from before resumes", func(t *testing.T) {
		ctl2 := natstest.Controller(t, s2)
		if _, err := ctl2.PutDeclaration(ctx, decl("n1", 2)); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-w.Updates():
			if d.ID != "n1/2" {
				t.Fatalf("watch gave %s after restart, want n1/2", d.ID)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the watch did not resume within 20s of the restart")
		}
	})
	t.Run("the connection from before publishes again", func(t *testing.T) {
		r := report("n1", "n1/2")
		if _, err := n.PublishReport(ctx, r); err != nil {
			t.Fatal(err)
		}
	})
}

func TestListen(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listen   string
		insecure bool
		want     error
	}{
		{"loopback", "127.0.0.1:-1", false, nil},
		{"localhost", "localhost:-1", false, nil},
		{"every interface without TLS", "0.0.0.0:-1", false, bus.ErrInsecure},
		{"no host without TLS", ":-1", false, bus.ErrInsecure},
		{"every interface, insecure said out loud", "0.0.0.0:-1", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := bus.StartServer(bus.ServerConfig{Dir: t.TempDir(), Listen: tc.listen, Insecure: tc.insecure})
			if s != nil {
				defer natstest.Stop(t, s)
			}
			if !errors.Is(err, tc.want) || (tc.want != nil) != (err != nil) {
				t.Fatalf("start on %s: %v, want %v", tc.listen, err, tc.want)
			}
		})
	}
}

func TestKeysOnDisk(t *testing.T) {
	dir := t.TempDir()
	a1, err := bus.LoadAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"operator.nk", "system-account.nk", "mesh-account.nk"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", f, fi.Mode().Perm())
		}
	}
	a2, err := bus.LoadAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a1.AccountPublicKey() != a2.AccountPublicKey() {
		t.Fatal("the account changed between two loads")
	}
}

func TestTLS(t *testing.T) {
	p := testtls.New(t)
	ca, cert, key := p.CAPEM, p.CertFile, p.KeyFile
	otherCA := testtls.New(t).CAPEM
	s := natstest.Start(t, func(c *bus.ServerConfig) { c.TLSCert, c.TLSKey = cert, key })
	ctl := natstest.Controller(t, s) // in process: no TLS
	ctx := ctxT(t)
	if _, err := ctl.PutDeclaration(ctx, decl("n1", 1)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ca   []byte
		ok   bool
	}{
		{"the CA that signed the certificate", ca, true},
		{"another CA", otherCA, false},
		{"the system's roots", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := bus.NewCreds(s.Authority().Issuer(), "n1", []string{s.URL()}, tc.ca)
			if err != nil {
				t.Fatal(err)
			}
			n, err := bus.DialNode(ctx, c, bus.NodeOptions{})
			if !tc.ok {
				if err == nil {
					n.Close()
					t.Fatal("connected without verifying the bus's certificate")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if d, _, err := n.Latest(ctx); err != nil || d.ID != "n1/1" {
				t.Fatalf("Latest over TLS: %s, %v", d.ID, err)
			}
		})
	}
	t.Run("beyond loopback with TLS", func(t *testing.T) {
		s := natstest.Start(t, func(c *bus.ServerConfig) { c.Listen, c.TLSCert, c.TLSKey = "0.0.0.0:-1", cert, key })
		if got := s.URL(); got[:6] != "tls://" {
			t.Fatalf("URL %s, want tls://", got)
		}
	})
}

// TestAgentBeforeBus: credentials are minted from the bus directory
// without a running server (mesh node register on a stopped controller),
// and an agent started before the bus waits for it; refused credentials
// fail at once.
func TestAgentBeforeBus(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	auth, err := bus.LoadAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := bus.NewCreds(auth.Issuer(), "n1", []string{url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := bus.DialNode(ctx, creds, bus.NodeOptions{}); !errors.Is(err, bus.ErrUnreachable) {
		t.Fatalf("dial with no bus: %v, want ErrUnreachable", err)
	}
	dialed := make(chan error, 1)
	go func() {
		n, err := bus.DialNode(ctx, creds, bus.NodeOptions{WaitForBus: true, RetryEvery: 50 * time.Millisecond})
		if err == nil {
			n.Close()
		}
		dialed <- err
	}()
	time.Sleep(200 * time.Millisecond)
	s, err := bus.StartServer(bus.ServerConfig{Dir: dir, Listen: "127.0.0.1:" + strconv.Itoa(port)})
	if err != nil {
		t.Fatal(err)
	}
	defer natstest.Stop(t, s)
	select {
	case err := <-dialed:
		if err != nil {
			t.Fatalf("the waiting agent: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting agent did not connect within 15s of the bus starting")
	}

	stranger, err := bus.LoadAuthority(t.TempDir()) // another mesh's account
	if err != nil {
		t.Fatal(err)
	}
	bad, err := bus.NewCreds(stranger.Issuer(), "n1", []string{url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := bus.DialNode(ctx, bad, bus.NodeOptions{WaitForBus: true}); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("another mesh's user: %v after %v; want a refusal at once", err, time.Since(start))
	}
}
