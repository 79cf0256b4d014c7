package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
)

// TestTokens: a token made is known at once by its controller and, from
// history, by a second controller of the same store; a revoked token is
// refused at once; its recorded actor is the asking operator; nothing is
// pushed for a token.
func TestTokens(t *testing.T) {
	h := start(t)
	before := h.bus.counts()
	made, err := h.ctrl.CreateToken(h.ctx, api.CreateTokenRequest{Operator: "root", Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(made.Token, api.TokenPrefix) || made.Name != "alice" || len(made.TokenID) != 16 || !made.ExpiresAt.IsZero() {
		t.Fatalf("created %+v", made)
	}
	if got := h.bus.counts(); len(got) != len(before) {
		t.Errorf("a token command pushed: %v, before %v", got, before)
	}
	op, err := h.ctrl.Authenticate(h.ctx, made.Token)
	if err != nil || op != "alice" {
		t.Fatalf("Authenticate = %q, %v; want alice", op, err)
	}
	for _, bad := range []string{"", "mtk_nope", made.Token + "x"} {
		if _, err := h.ctrl.Authenticate(h.ctx, bad); !errors.Is(err, controller.ErrTokenUnknown) {
			t.Errorf("Authenticate(%q) = %v, want ErrTokenUnknown", bad, err)
		}
	}
	if _, err := h.ctrl.CreateToken(h.ctx, api.CreateTokenRequest{Operator: "root", Name: "alice"}); err == nil {
		t.Error("a second live token for alice was made")
	}

	// A second controller, not running, over the same store.
	second, err := controller.New(controller.Config{Store: h.store})
	if err != nil {
		t.Fatal(err)
	}
	if op, err := second.Authenticate(h.ctx, made.Token); err != nil || op != "alice" {
		t.Fatalf("second controller: Authenticate = %q, %v; want alice", op, err)
	}

	if _, err := h.ctrl.RevokeToken(h.ctx, api.RevokeTokenRequest{Operator: "root", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctrl.Authenticate(h.ctx, made.Token); !errors.Is(err, controller.ErrTokenRevoked) {
		t.Errorf("after revoke: %v, want ErrTokenRevoked", err)
	}
	if err := second.Sync(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Authenticate(h.ctx, made.Token); !errors.Is(err, controller.ErrTokenRevoked) {
		t.Errorf("second controller after revoke: %v, want ErrTokenRevoked", err)
	}
	if _, err := h.ctrl.RevokeToken(h.ctx, api.RevokeTokenRequest{Operator: "root", Name: "alice"}); err != nil {
		t.Errorf("revoking twice: %v, want done", err)
	}
	if _, err := h.ctrl.RevokeToken(h.ctx, api.RevokeTokenRequest{Operator: "root", Name: "bob"}); err == nil {
		t.Error("revoking a name that never had a token was done")
	}

	list, err := h.ctrl.Tokens(h.ctx)
	if err != nil || len(list.Tokens) != 1 {
		t.Fatalf("Tokens = %+v, %v", list, err)
	}
	if x := list.Tokens[0]; x.Name != "alice" || x.ID != made.TokenID || x.By != "operator:root" || x.Revoked.IsZero() || x.RevokedBy != "operator:root" {
		t.Errorf("listed %+v", x)
	}
	evs, err := h.store.ReadStream(h.ctx, events.TokenStream("alice"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Errorf("alice's stream holds %d events, want 2 (created, revoked)", len(evs))
	}
	for _, ev := range evs {
		if ev.Actor != "operator:root" {
			t.Errorf("%s by %q, want operator:root", ev.Type, ev.Actor)
		}
		if strings.Contains(string(ev.Data), made.Token) {
			t.Errorf("%s holds the secret", ev.Type)
		}
	}
}

// TestTokenExpiry: a token with a time to live is refused from its expiry.
func TestTokenExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := start(t)
	c, err := controller.New(controller.Config{Store: h.store, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	made, err := c.CreateToken(h.ctx, api.CreateTokenRequest{Operator: "root", Name: "carol", TTLSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(time.Hour); !made.ExpiresAt.Equal(want) {
		t.Errorf("expires at %v, want %v", made.ExpiresAt, want)
	}
	if op, err := c.Authenticate(h.ctx, made.Token); err != nil || op != "carol" {
		t.Fatalf("before expiry: %q, %v", op, err)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if _, err := c.Authenticate(h.ctx, made.Token); !errors.Is(err, controller.ErrTokenExpired) {
		t.Errorf("at expiry: %v, want ErrTokenExpired", err)
	}
	if _, err := c.CreateToken(h.ctx, api.CreateTokenRequest{Operator: "root", Name: "dave", TTLSeconds: -1}); err == nil {
		t.Error("a negative ttl was taken")
	}
	// Asked directly (the CLI on a local store, no HTTP handler's
	// Validate), a ttl past the bound is refused before it is converted:
	// max int64 seconds once recorded a token born expired.
	for _, ttl := range []int64{9223372036854775807, 36028797018967568, api.MaxTokenTTLSeconds + 1} {
		if res, err := c.CreateToken(h.ctx, api.CreateTokenRequest{Operator: "root", Name: "erin", TTLSeconds: ttl}); !strings.Contains(fmt.Sprint(err), "1 to 315360000 seconds") {
			t.Errorf("ttl_seconds %d: %+v, %v; want it refused naming the bound", ttl, res, err)
		}
	}
}

// TestRecordToken: the bootstrap token is recorded once, by its given
// actor, and authenticates as its name.
func TestRecordToken(t *testing.T) {
	h := start(t)
	ok, err := h.ctrl.RecordToken(h.ctx, controller.BootstrapTokenName, "boot-secret", "controller")
	if err != nil || !ok {
		t.Fatalf("RecordToken = %v, %v", ok, err)
	}
	if ok, err := h.ctrl.RecordToken(h.ctx, controller.BootstrapTokenName, "other", "controller"); err != nil || ok {
		t.Errorf("second RecordToken = %v, %v; want not recorded", ok, err)
	}
	if op, err := h.ctrl.Authenticate(h.ctx, "boot-secret"); err != nil || op != controller.BootstrapTokenName {
		t.Errorf("Authenticate = %q, %v", op, err)
	}
	list, _ := h.ctrl.Tokens(h.ctx)
	if len(list.Tokens) != 1 || list.Tokens[0].By != "controller" {
		t.Errorf("tokens %+v", list)
	}
	// A restart: the token table says the token is recorded, so no
	// stream is read (a bolt file still being walked answers stream reads
	// only once its walk is done).
	again, err := controller.New(controller.Config{Store: noStreamReads{h.store}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := again.RecordToken(h.ctx, controller.BootstrapTokenName, "boot-secret", "controller"); err != nil || ok {
		t.Errorf("RecordToken after a restart = %v, %v; want not recorded, from the token table", ok, err)
	}
}

// noStreamReads is a store whose stream reads fail.
type noStreamReads struct{ events.Store }

func (noStreamReads) ReadStream(context.Context, string, uint64, int) ([]events.Event, error) {
	return nil, errors.New("a stream was read")
}
