package join

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/commands"
	"meshplane/internal/testtls"
)

// controller is the controller's side of a join as the test needs it: the
// real JoinHandler over TLS, the join itself decided here.
type controller struct {
	api.Access
	issuer *bus.Issuer
	refuse error // answer every join with this
	joins  atomic.Int32
	keys   []string
	ca     []byte // the bus CA answered
}

func (c *controller) Join(_ context.Context, req api.JoinRequest) (api.JoinResponse, error) {
	c.joins.Add(1)
	if c.refuse != nil {
		return api.JoinResponse{}, c.refuse
	}
	tok, err := api.ParseJoinToken(req.Token)
	if err != nil {
		return api.JoinResponse{}, err
	}
	c.keys = append(c.keys, req.PublicKey)
	jwt, err := c.issuer.NodeFor(tok.Node, req.PublicKey)
	if err != nil {
		return api.JoinResponse{}, err
	}
	return api.JoinResponse{Node: tok.Node, Creds: api.NodeCreds{Version: 1, Node: tok.Node, URLs: []string{"tls://10.0.0.1:4222"}, JWT: jwt, CA: string(c.ca)}}, nil
}

// serve starts c behind TLS of pki and returns a token for node naming
// the CA's fingerprint fp.
func serve(t *testing.T, c *controller, pki testtls.PKI, node, fp string) string {
	t.Helper()
	mux := http.NewServeMux()
	h := httpapi.JoinHandler(c, pki.CAPEM)
	mux.Handle("/v1/join", h)
	mux.Handle("/v1/join/ca", h)
	srv := httptest.NewUnstartedServer(mux)
	cert, err := tls.LoadX509KeyPair(pki.CertFile, pki.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := strings.Replace(srv.URL, "https://127.0.0.1", "https://localhost", 1)
	return api.JoinToken{URL: url, CAFingerprint: fp, Node: node, Secret: "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI"}.String()
}

func newController(t *testing.T) *controller {
	t.Helper()
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	iss, err := bus.NewIssuer(seed, "")
	if err != nil {
		t.Fatal(err)
	}
	return &controller{issuer: iss}
}

func TestJoin(t *testing.T) {
	ctx := context.Background()
	pki := testtls.New(t)
	fp, err := httpapi.CAFingerprint(pki.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := newController(t)
	c.ca = pki.CAPEM
	tok := serve(t, c, pki, "h1", fp)
	data := filepath.Join(t.TempDir(), "agent")
	at := time.Date(2026, 12, 1, 23, 2, 0, 0, time.UTC)
	res, err := Join(ctx, Options{Token: tok, Data: data, AgentVersion: "test", Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Node != "h1" || res.Already || res.Creds != filepath.Join(data, CredsFile) {
		t.Fatalf("result %+v", res)
	}
	fi, err := os.Stat(res.Creds)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	creds, err := bus.LoadCreds(res.Creds)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed([]byte(creds.Seed))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	if len(c.keys) != 1 || c.keys[0] != pub {
		t.Fatalf("sent keys %v; the seed kept is of %s", c.keys, pub)
	}
	if u, _ := bus.UserPublicKey(creds.JWT); u != pub || creds.CA != string(pki.CAPEM) || creds.Node != "h1" {
		t.Fatalf("credentials written: jwt of %s, ca %q, node %q", u, creds.CA, creds.Node)
	}
	info, err := ReadInfo(data)
	if err != nil || info.Node != "h1" || info.PublicKey != pub || info.CAFingerprint != fp || !info.JoinedAt.Equal(at) {
		t.Fatalf("join.json %+v, %v", info, err)
	}

	// Joined: a second join sends nothing and keeps the key.
	again, err := Join(ctx, Options{Token: tok, Data: data})
	if err != nil || !again.Already || c.joins.Load() != 1 {
		t.Fatalf("second join: %+v, %v, %d joins sent", again, err, c.joins.Load())
	}
	// ... and a token of another node is refused there.
	other := serve(t, c, pki, "h2", fp)
	if _, err := Join(ctx, Options{Token: other, Data: data}); err == nil || !strings.Contains(err.Error(), "credentials of node h1, not h2") {
		t.Fatalf("another node's token on h1's data: %v", err)
	}
}

func TestJoinRefusals(t *testing.T) {
	ctx := context.Background()
	pki := testtls.New(t)
	fp, _ := httpapi.CAFingerprint(pki.CAPEM)
	for _, tc := range []struct {
		name   string
		fp     string // the token's fingerprint
		refuse error
		url    string // Options.URL
		want   string
		is     error
	}{
		{name: "a CA that is not the token's", fp: strings.Repeat("0", 64), want: "the token names 0000", is: ErrFingerprint},
		{name: "a used token", fp: fp, refuse: &commands.Rejection{Code: commands.CodeTokenUsed, Msg: "join token x for node h1 was used already"}, want: "was used already"},
		{name: "plain HTTP beyond loopback", fp: "", url: "http://10.0.0.1:7480", want: "not loopback", is: ErrInsecure},
		{name: "no CA: the system roots, which do not know the test CA", fp: "", want: "certificate signed by unknown authority"},
		{name: "a CA over plain HTTP", fp: fp, url: "http://localhost:1", want: "must be https://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newController(t)
			c.refuse = tc.refuse
			tok := serve(t, c, pki, "h1", tc.fp)
			data := t.TempDir()
			_, err := Join(ctx, Options{Token: tok, Data: data, URL: tc.url})
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(data, CredsFile)); !os.IsNotExist(err) {
				t.Fatalf("a refused join left credentials: %v", err)
			}
		})
	}
	if _, err := Join(ctx, Options{Token: "MJ1.nonsense", Data: t.TempDir()}); err == nil {
		t.Fatal("a token that does not decode joined")
	}
}
