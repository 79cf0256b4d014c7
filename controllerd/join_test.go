package controllerd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/controllerd"
	"meshplane/internal/testtls"
)

// serveTLS runs a controller with the test CA's certificate on data, and
// returns its ready and a stop.
func serveTLS(t *testing.T, data string, p testtls.PKI) (controllerd.Ready, func()) {
	t.Helper()
	ready := make(chan controllerd.Ready, 1)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := controllerd.Config{
		Data: data, Listen: "127.0.0.1:0", BusListen: "127.0.0.1:0", Interval: time.Hour,
		TLSCert: p.CertFile, TLSKey: p.KeyFile, TLSCA: writeFile(t, "ca.pem", p.CAPEM),
		Logger: testLogger(), Ready: func(rd controllerd.Ready) { ready <- rd },
	}
	go func() { done <- controllerd.Run(ctx, cfg) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controllerd.Run: %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Error("controllerd.Run did not stop within 40s")
		}
	}
	select {
	case rd := <-ready:
		return rd, stop
	case err := <-done:
		t.Fatalf("controllerd.Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("controllerd.Run did not serve within 30s")
	}
	return controllerd.Ready{}, stop
}

// join is what the agent does: fetch and pin the CA, make a key, send
// its public half, and build credentials with its own seed.
func join(t *testing.T, token string) (bus.Creds, error) {
	t.Helper()
	ctx := context.Background()
	tok, err := api.ParseJoinToken(token)
	if err != nil {
		t.Fatal(err)
	}
	blind, err := httpapi.NewClient(tok.URL, "", httpapi.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := blind.JoinCA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := httpapi.CAFingerprint(ca); fp != tok.CAFingerprint {
		t.Fatalf("the CA served is not the token's: %s, %s", fp, tok.CAFingerprint)
	}
	c, err := httpapi.NewClient(tok.URL, "", httpapi.WithCA(ca))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	jr, err := c.Join(ctx, api.JoinRequest{Token: token, PublicKey: pub, AgentVersion: "test"})
	if err != nil {
		return bus.Creds{}, err
	}
	cr := jr.Creds
	creds := bus.Creds{Version: cr.Version, Node: cr.Node, URLs: cr.URLs, JWT: cr.JWT, Seed: string(seed), CA: cr.CA}
	path := filepath.Join(t.TempDir(), "node.creds")
	if err := bus.WriteCreds(path, creds); err != nil {
		t.Fatalf("the joined credentials do not make a credentials file: %v", err)
	}
	return creds, nil
}

// connect dials the bus as creds' user, verifying the bus with the CA
// they carry, without reconnecting.
func connect(creds bus.Creds, opts ...nats.Option) (*nats.Conn, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(creds.CA))
	return nats.Connect(strings.Join(creds.URLs, ","), append([]nats.Option{
		nats.UserJWTAndSeed(creds.JWT, creds.Seed), nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		nats.NoReconnect(), nats.Timeout(5 * time.Second),
	}, opts...)...)
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestJoinRevokeRejoin: over TLS from a private CA, a host joins with a
// token and a key of its own, and its credentials reach the bus over TLS
// with the CA they carry; a second use of the token is refused; a revoke
// closes its connection and refuses its reconnection, also after a
// restart of the controller; a new token lets it join again with a new
// key.
func TestJoinRevokeRejoin(t *testing.T) {
	p := testtls.New(t)
	data := t.TempDir()
	rd, stop := serveTLS(t, data, p)
	op, err := httpapi.NewClient(rd.APIURL, rd.Token, httpapi.WithCA(p.CAPEM))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tr, err := op.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4"})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := join(t, tr.Token)
	if err != nil {
		t.Fatal(err)
	}
	if creds.CA == "" || !strings.HasPrefix(creds.URLs[0], "tls://") {
		t.Fatalf("the credentials name %v with CA %q; want tls:// and the CA", creds.URLs, creds.CA)
	}
	if _, err := join(t, tr.Token); err == nil || !strings.Contains(err.Error(), "used already") {
		t.Fatalf("a second join with the token: %v; want it refused as used", err)
	}
	closed := make(chan struct{})
	nc, err := connect(creds, nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatalf("the joined node does not reach the bus: %v", err)
	}
	defer nc.Close()

	rr, err := op.Revoke(ctx, api.RevokeRequest{Operator: "ana", Node: "n4"})
	if err != nil || len(rr.Revoked) != 1 {
		t.Fatalf("Revoke = %+v, %v", rr, err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the revoked node's connection is open 5s after the revoke")
	}
	if _, err := connect(creds); err == nil {
		t.Fatal("the revoked node reconnects")
	}

	// A restart does not un-revoke.
	stop()
	rd, stop = serveTLS(t, data, p)
	defer stop()
	if _, err := connect(creds); err == nil {
		t.Fatal("the revoked node reconnects after a restart")
	}
	op, err = httpapi.NewClient(rd.APIURL, rd.Token, httpapi.WithCA(p.CAPEM))
	if err != nil {
		t.Fatal(err)
	}
	tr2, err := op.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := join(t, tr2.Token)
	if err != nil {
		t.Fatal(err)
	}
	nc2, err := connect(again)
	if err != nil {
		t.Fatalf("the rejoined node does not reach the bus: %v", err)
	}
	nc2.Close()
	ns, err := op.NodeShow(ctx, "n4")
	if err != nil || ns.Access == nil || len(ns.Access.Keys) != 2 || !ns.Access.Keys[0].Revoked || ns.Access.Keys[1].Revoked {
		t.Fatalf("node show: %+v, %v", ns.Access, err)
	}
}
