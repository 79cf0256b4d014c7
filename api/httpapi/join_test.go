package httpapi_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/internal/testtls"
)

// joinMinter hands back what it is asked for.
type joinMinter struct {
	url, ca string
	revoked map[string]time.Time
}

func (m *joinMinter) Endpoint() (string, string) { return m.url, m.ca }
func (m *joinMinter) CheckKey(pub string) error {
	if !strings.HasPrefix(pub, "U") {
		return errors.New("not a user key")
	}
	return nil
}
func (m *joinMinter) NodeUser(node, pub string) (api.NodeCreds, error) {
	return api.NodeCreds{Version: 1, Node: node, URLs: []string{"tls://127.0.0.1:4222"}, JWT: "jwt-of-" + pub, CA: "ca"}, nil
}
func (m *joinMinter) NewNodeCreds(node string) (api.NodeCreds, string, error) {
	pub := "U" + strings.Repeat("Q", 55)
	return api.NodeCreds{Version: 1, Node: node, URLs: []string{"tls://127.0.0.1:4222"}, JWT: "jwt-of-" + pub, Seed: "SU"}, pub, nil
}
func (m *joinMinter) Revoke(_ context.Context, r map[string]time.Time) error {
	m.revoked = r
	return nil
}

func rejectionCode(err error) string {
	var r *commands.Rejection
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// TestJoinOverTLS: an operator asks for a token over TLS; a host with no
// operator token fetches the CA unverified, checks it against the token's
// fingerprint, then joins trusting it alone; a second join is refused as
// used, with its status; the operator routes refuse a missing token; the
// revoke names the joined key.
func TestJoinOverTLS(t *testing.T) {
	e := newEnv(t)
	p := testtls.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fp, err := httpapi.CAFingerprint(p.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String()
	m := &joinMinter{url: url, ca: fp}
	e.ctrl.SetMinter(m)
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.Handler(e.ctrl, token))
	jh := httpapi.JoinHandler(e.ctrl, p.CAPEM)
	mux.Handle("/v1/join", jh)
	mux.Handle("/v1/join/ca", jh)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- httpapi.Serve(ctx, ln, mux, httpapi.ServeOptions{TLSCert: p.CertFile, TLSKey: p.KeyFile})
	}()
	defer func() { cancel(); <-served }()

	op, err := httpapi.NewClient(url, token, httpapi.WithCA(p.CAPEM))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := op.JoinToken(e.ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4", TTLSeconds: 900})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := api.ParseJoinToken(tr.Token)
	if err != nil || tok.URL != url || tok.CAFingerprint != fp || tok.Node != "n4" {
		t.Fatalf("token %+v, %v", tok, err)
	}

	// The host: no operator token; the CA fetched unverified, then checked.
	blind, err := httpapi.NewClient(tok.URL, "", httpapi.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := blind.JoinCA(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := httpapi.CAFingerprint(caPEM); got != tok.CAFingerprint {
		t.Fatalf("the CA served has fingerprint %s, the token says %s", got, tok.CAFingerprint)
	}
	host, err := httpapi.NewClient(tok.URL, "", httpapi.WithCA(caPEM))
	if err != nil {
		t.Fatal(err)
	}
	key := "U" + strings.Repeat("Z", 55)
	jr, err := host.Join(e.ctx, api.JoinRequest{Token: tr.Token, PublicKey: key, AgentVersion: "dev"})
	if err != nil || jr.Node != "n4" || jr.Creds.JWT != "jwt-of-"+key || jr.Creds.Seed != "" {
		t.Fatalf("Join = %+v, %v", jr, err)
	}
	_, err = host.Join(e.ctx, api.JoinRequest{Token: tr.Token, PublicKey: "U" + strings.Repeat("Y", 55)})
	if rejectionCode(err) != commands.CodeTokenUsed || httpapi.StatusOf(commands.CodeTokenUsed) != http.StatusConflict {
		t.Fatalf("a second join = %v; want %s (409)", err, commands.CodeTokenUsed)
	}
	if _, err := host.Join(e.ctx, api.JoinRequest{Token: tr.Token, PublicKey: key, Node: "n5"}); rejectionCode(err) != commands.CodeTokenOtherNode {
		t.Fatalf("a join as another node = %v; want %s", err, commands.CodeTokenOtherNode)
	}
	if _, err := host.Join(e.ctx, api.JoinRequest{Token: "MJ1.x", PublicKey: key}); rejectionCode(err) != commands.CodeTokenUnknown {
		t.Fatalf("a join with a bad token = %v; want %s", err, commands.CodeTokenUnknown)
	}
	if _, err := host.JoinToken(e.ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4"}); !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Fatalf("a join token without the operator token = %v; want ErrUnauthorized", err)
	}
	if _, err := host.Revoke(e.ctx, api.RevokeRequest{Operator: "ana", Node: "n4"}); !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Fatalf("a revoke without the operator token = %v; want ErrUnauthorized", err)
	}
	ns, err := op.NodeShow(e.ctx, "n4")
	if err != nil || ns.Access == nil || len(ns.Access.Tokens) != 1 || !strings.HasPrefix(ns.Access.Tokens[0].From, "127.0.0.1:") {
		t.Fatalf("node show lists %+v, %v; want the join from 127.0.0.1", ns.Access, err)
	}
	cr, err := op.NodeCreds(e.ctx, api.NodeRequest{Operator: "ana", Node: "n4"})
	if err != nil || cr.Creds.Seed == "" {
		t.Fatalf("NodeCreds = %+v, %v", cr, err)
	}
	rr, err := op.Revoke(e.ctx, api.RevokeRequest{Operator: "ana", Node: "n4"})
	if err != nil || len(rr.Revoked) != 2 || rr.Revoked[0] != key {
		t.Fatalf("Revoke = %+v, %v", rr, err)
	}
	if _, ok := m.revoked[key]; !ok {
		t.Fatalf("the bus was given %v", m.revoked)
	}
}

// TestJoinCAOnPlainHTTP: no CA to give is a 404 no-ca.
func TestJoinCAOnPlainHTTP(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- httpapi.Serve(ctx, ln, httpapi.JoinHandler(e.ctrl, nil), httpapi.ServeOptions{}) }()
	defer func() { cancel(); <-served }()
	c, err := httpapi.NewClient("http://"+ln.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.JoinCA(e.ctx); rejectionCode(err) != httpapi.CodeNoCA {
		t.Fatalf("JoinCA on plain HTTP = %v; want %s", err, httpapi.CodeNoCA)
	}
	if _, err := c.Join(e.ctx, api.JoinRequest{Token: "MJ1.x", PublicKey: "U"}); rejectionCode(err) != commands.CodeInvalid && rejectionCode(err) != commands.CodeTokenUnknown {
		t.Fatalf("a join on a controller without a minter = %v", err)
	}
}
