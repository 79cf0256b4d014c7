package controller_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events/memstore"
)

// fakeMinter signs nothing: it hands back what it was asked for, and
// keeps the last revocation list.
type fakeMinter struct {
	mu      sync.Mutex
	revoked map[string]time.Time
	n       int
}

func (f *fakeMinter) Endpoint() (string, string) {
	return "https://10.0.0.1:7480", strings.Repeat("0f", 32)
}
func (f *fakeMinter) CheckKey(pub string) error {
	if !strings.HasPrefix(pub, "U") {
		return errors.New("not a user key")
	}
	return nil
}
func (f *fakeMinter) NodeUser(node, pub string) (api.NodeCreds, error) {
	return api.NodeCreds{Version: 1, Node: node, URLs: []string{"tls://10.0.0.1:4222"}, JWT: "jwt-of-" + pub}, nil
}
func (f *fakeMinter) NewNodeCreds(node string) (api.NodeCreds, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	pub := "U" + strings.Repeat(string(rune('A'+f.n)), 55)
	return api.NodeCreds{Version: 1, Node: node, URLs: []string{"tls://10.0.0.1:4222"}, JWT: "jwt-of-" + pub, Seed: "SU..."}, pub, nil
}
func (f *fakeMinter) Revoke(_ context.Context, r map[string]time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = r
	return nil
}

func codeOf(err error) string {
	var r *commands.Rejection
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// TestJoinAndRevoke: a token is issued (the node registered with it),
// redeemed once, refused the second time, also by another controller of
// the same store; a revoke lists the joined key and the issued one, and
// puts them on the bus; a new token lets the host join again.
func TestJoinAndRevoke(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := &fakeMinter{}
	ctl, err := controller.New(controller.Config{Store: store, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4"}); codeOf(err) != commands.CodeInvalid {
		t.Fatalf("JoinToken without a minter = %v; want invalid", err)
	}
	ctl.SetMinter(m)
	tr, err := ctl.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4", TTLSeconds: 600})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := api.ParseJoinToken(tr.Token)
	if err != nil || tok.Node != "n4" || tok.URL != "https://10.0.0.1:7480" || !tr.ExpiresAt.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("token %+v (%v), expires %s", tok, err, tr.ExpiresAt)
	}
	if ns, err := ctl.NodeShow(ctx, "n4"); err != nil || ns.Access == nil || len(ns.Access.Tokens) != 1 || !ns.Access.Tokens[0].UsedAt.IsZero() {
		t.Fatalf("the node is not registered by its token, or node show does not list it: %+v, %v", ns.Access, err)
	}
	key := "U" + strings.Repeat("Z", 55)
	jr, err := ctl.Join(ctx, api.JoinRequest{Token: tr.Token, PublicKey: key, AgentVersion: "dev", From: "10.0.0.4:5000"})
	if err != nil || jr.Node != "n4" || jr.Creds.JWT != "jwt-of-"+key || jr.Creds.Seed != "" {
		t.Fatalf("Join = %+v, %v", jr, err)
	}
	if _, err := ctl.Join(ctx, api.JoinRequest{Token: tr.Token, PublicKey: "U" + strings.Repeat("Y", 55)}); codeOf(err) != commands.CodeTokenUsed {
		t.Fatalf("a second Join = %v; want %s", err, commands.CodeTokenUsed)
	}
	// Another controller of the same store knows it from history alone.
	other, err := controller.New(controller.Config{Store: store, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	other.SetMinter(m)
	if _, err := other.Join(ctx, api.JoinRequest{Token: tr.Token, PublicKey: "U" + strings.Repeat("Y", 55)}); codeOf(err) != commands.CodeTokenUsed || !strings.Contains(err.Error(), "from 10.0.0.4:5000") {
		t.Fatalf("Join on another controller = %v; want %s naming where", err, commands.CodeTokenUsed)
	}
	if _, err := ctl.Join(ctx, api.JoinRequest{Token: "MJ1.bogus", PublicKey: key}); codeOf(err) != commands.CodeTokenUnknown {
		t.Fatalf("Join with a bad token = %v; want %s", err, commands.CodeTokenUnknown)
	}
	// Asked directly (no HTTP handler's Validate), a ttl past 7 days is
	// refused before it is converted: 2^55+ seconds once overflowed into a
	// token of about an hour.
	for _, ttl := range []int64{36028797018967568, 9223372036854775807, api.MaxJoinTTLSeconds + 1} {
		if res, err := ctl.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4", TTLSeconds: ttl}); codeOf(err) != commands.CodeInvalid || !strings.Contains(err.Error(), "1 to 604800 seconds") {
			t.Fatalf("JoinToken with ttl_seconds %d = %+v, %v; want invalid naming the bound", ttl, res, err)
		}
	}
	late, err := ctl.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4", TTLSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if _, err := ctl.Join(ctx, api.JoinRequest{Token: late.Token, PublicKey: "U" + strings.Repeat("X", 55)}); codeOf(err) != commands.CodeTokenExpired {
		t.Fatalf("Join with an expired token = %v; want %s", err, commands.CodeTokenExpired)
	}

	cr, err := ctl.NodeCreds(ctx, api.NodeRequest{Operator: "ana", Node: "n4"})
	if err != nil || cr.Creds.Seed == "" {
		t.Fatalf("NodeCreds = %+v, %v", cr, err)
	}
	if _, err := ctl.NodeCreds(ctx, api.NodeRequest{Operator: "ana", Node: "n9"}); codeOf(err) != commands.CodeNodeUnknown {
		t.Fatalf("NodeCreds of an unknown node = %v", err)
	}
	rr, err := ctl.Revoke(ctx, api.RevokeRequest{Operator: "ana", Node: "n4"})
	if err != nil || len(rr.Revoked) != 2 || rr.Revoked[0] != key {
		t.Fatalf("Revoke = %+v, %v; want the joined key and the issued one", rr, err)
	}
	if _, ok := m.revoked[key]; !ok || len(m.revoked) != 2 {
		t.Fatalf("the bus was given %v", m.revoked)
	}
	again, err := ctl.Revoke(ctx, api.RevokeRequest{Operator: "ana", Node: "n4"})
	if err != nil || len(again.Revoked) != 0 || len(again.All) != 2 {
		t.Fatalf("Revoke again = %+v, %v", again, err)
	}
	if ns, err := other.NodeShow(ctx, "n4"); err != nil || len(ns.Access.Keys) != 2 || !ns.Access.Keys[0].Revoked || ns.Access.Tokens[1].From != "10.0.0.4:5000" {
		t.Fatalf("node show after the revoke: %+v, %v", ns.Access, err)
	}
	list, err := other.Revocations(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("Revocations from history = %v, %v", list, err)
	}

	tr2, err := ctl.JoinToken(ctx, api.JoinTokenRequest{Operator: "ana", Node: "n4"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Join(ctx, api.JoinRequest{Token: tr2.Token, PublicKey: key}); codeOf(err) != commands.CodeBadPublicKey {
		t.Fatalf("rejoining with the revoked key = %v; want %s", err, commands.CodeBadPublicKey)
	}
	if _, err := ctl.Join(ctx, api.JoinRequest{Token: tr2.Token, PublicKey: "U" + strings.Repeat("W", 55)}); err != nil {
		t.Fatalf("rejoining with a new key: %v", err)
	}
}
