package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/controller"
	"meshplane/events/memstore"
)

// TestOperatorTokens: a request made with a per-operator token records the
// token's operator as the actor, whatever its body says; the bootstrap
// token keeps the declared operator; a revoked token is 401 at once,
// naming the revocation; an unknown one is 401.
func TestOperatorTokens(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memstore.New()
	defer store.Close()
	ctrl, err := controller.New(controller.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	srv := httptest.NewServer(httpapi.Handler(ctrl, token, httpapi.WithAuthenticator(ctrl.Authenticate)))
	defer srv.Close()
	boot, err := httpapi.NewClient(srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}

	made, err := boot.CreateToken(ctx, api.CreateTokenRequest{Operator: "root", Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := httpapi.NewClient(srv.URL, made.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "mallory", Nodes: []string{"n1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := boot.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "bob", Nodes: []string{"n2"}}); err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]string{"n1": "operator:alice", "n2": "operator:bob"} {
		evs, err := store.ReadStream(ctx, "node-"+node, 0, 0)
		if err != nil || len(evs) == 0 {
			t.Fatalf("node-%s: %d events, %v", node, len(evs), err)
		}
		if evs[0].Actor != want {
			t.Errorf("node-%s registered by %q, want %q", node, evs[0].Actor, want)
		}
	}
	// A token's operator makes tokens as itself too.
	if _, err := alice.CreateToken(ctx, api.CreateTokenRequest{Operator: "root", Name: "carol"}); err != nil {
		t.Fatal(err)
	}
	list, err := alice.Tokens(ctx)
	if err != nil || len(list.Tokens) != 2 || list.Tokens[1].By != "operator:alice" {
		t.Fatalf("tokens %+v, %v; want carol's by operator:alice", list, err)
	}

	if _, err := boot.RevokeToken(ctx, api.RevokeTokenRequest{Operator: "root", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Status(ctx, api.StatusRequest{})
	if !errors.Is(err, httpapi.ErrUnauthorized) || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a read with a revoked token: %v, want ErrUnauthorized naming the revocation", err)
	}
	if _, err := alice.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "alice", Nodes: []string{"n3"}}); !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Errorf("a write with a revoked token: %v, want ErrUnauthorized", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/info", nil)
	req.Header.Set("Authorization", "Bearer mtk_unknown")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unknown token: %d, want 401", resp.StatusCode)
	}
	if _, err := boot.RevokeToken(ctx, api.RevokeTokenRequest{Operator: "root", Name: "nobody"}); err == nil {
		t.Error("revoking a name without a token was done")
	}
}

// TestBootstrapTokenRevoked: the bootstrap token is taken before the
// controller records it, and refused, naming the revocation, once its
// record ("admin") is revoked, on the API as on the page's gate; an
// operator's token still works.
func TestBootstrapTokenRevoked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memstore.New()
	defer store.Close()
	ctrl, err := controller.New(controller.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	gate := httpapi.NewGate(token, ctrl.Authenticate)
	page := httptest.NewServer(gate.Require(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})))
	defer page.Close()
	pageCode := func() int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page.URL, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	srv := httptest.NewServer(httpapi.Handler(ctrl, token, httpapi.WithAuthenticator(ctrl.Authenticate)))
	defer srv.Close()
	boot, err := httpapi.NewClient(srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := boot.Status(ctx, api.StatusRequest{}); err != nil {
		t.Fatalf("the bootstrap token before it is recorded: %v", err)
	}
	if ok, err := ctrl.RecordToken(ctx, "admin", token, "controller"); err != nil || !ok {
		t.Fatalf("RecordToken: %v, %v", ok, err)
	}
	made, err := boot.CreateToken(ctx, api.CreateTokenRequest{Operator: "root", Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if code := pageCode(); code != http.StatusOK {
		t.Errorf("the page with the recorded bootstrap token: %d, want 200", code)
	}
	if _, err := boot.RevokeToken(ctx, api.RevokeTokenRequest{Operator: "root", Name: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := boot.Status(ctx, api.StatusRequest{}); !errors.Is(err, httpapi.ErrUnauthorized) || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a read with the revoked bootstrap token: %v, want ErrUnauthorized naming the revocation", err)
	}
	if code := pageCode(); code != http.StatusUnauthorized {
		t.Errorf("the page with the revoked bootstrap token: %d, want 401", code)
	}
	alice, err := httpapi.NewClient(srv.URL, made.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Status(ctx, api.StatusRequest{}); err != nil {
		t.Errorf("an operator's token after the bootstrap token's revocation: %v", err)
	}
}
