package commands_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
)

var (
	sumA = strings.Repeat("a1", 32)
	sumB = strings.Repeat("b2", 32)
)

// TestDecideTokens: given a token stream's events, when a token command,
// then its events or its refusal.
func TestDecideTokens(t *testing.T) {
	exp := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := exp.Add(-time.Hour)
	created := events.TokenCreated{Name: "alice", TokenID: sumA[:16], SecretSHA256: sumA, By: "operator:admin"}
	revoked := events.TokenRevoked{Name: "alice", TokenID: sumA[:16], By: "operator:admin"}
	cases := []struct {
		name  string
		given []events.Payload
		cmd   commands.Command
		want  []events.Payload
		code  string // a refusal's code
	}{
		{"create", nil, commands.CreateToken{Name: "alice", SecretSHA256: sumA, By: "operator:admin"}, []events.Payload{created}, ""},
		{"create with an expiry", nil, commands.CreateToken{Name: "alice", SecretSHA256: sumA, ExpiresAt: exp, By: "operator:admin", Now: now},
			[]events.Payload{events.TokenCreated{Name: "alice", TokenID: sumA[:16], SecretSHA256: sumA, ExpiresAt: exp, By: "operator:admin"}}, ""},
		{"create twice, same name", []events.Payload{created}, commands.CreateToken{Name: "alice", SecretSHA256: sumB, By: "operator:admin"}, nil, commands.CodeTokenExists},
		{"create again after a revoke", []events.Payload{created, revoked}, commands.CreateToken{Name: "alice", SecretSHA256: sumB, By: "operator:alice"},
			[]events.Payload{events.TokenCreated{Name: "alice", TokenID: sumB[:16], SecretSHA256: sumB, By: "operator:alice"}}, ""},
		{"create, a hash that is not hex", nil, commands.CreateToken{Name: "alice", SecretSHA256: strings.Repeat("zz", 32)}, nil, commands.CodeInvalid},
		{"create, a short hash", nil, commands.CreateToken{Name: "alice", SecretSHA256: "ab"}, nil, commands.CodeInvalid},
		// A token is never recorded born expired, nor past the bound.
		{"create, expiring now", nil, commands.CreateToken{Name: "alice", SecretSHA256: sumA, ExpiresAt: now, Now: now}, nil, commands.CodeInvalid},
		{"create, expired before it is made", nil, commands.CreateToken{Name: "alice", SecretSHA256: sumA, ExpiresAt: now.Add(-time.Second), Now: now}, nil, commands.CodeInvalid},
		{"create, 10 years and a second", nil, commands.CreateToken{Name: "alice", SecretSHA256: sumA, ExpiresAt: now.Add(commands.MaxTokenTTL + time.Second), Now: now}, nil, commands.CodeInvalid},
		{"create, 10 years", nil, commands.CreateToken{Name: "alice", SecretSHA256: sumA, ExpiresAt: now.Add(commands.MaxTokenTTL), Now: now, By: "operator:admin"},
			[]events.Payload{events.TokenCreated{Name: "alice", TokenID: sumA[:16], SecretSHA256: sumA, ExpiresAt: now.Add(commands.MaxTokenTTL), By: "operator:admin"}}, ""},
		{"create, a bad name", nil, commands.CreateToken{Name: "Alice Smith", SecretSHA256: sumA}, nil, commands.CodeInvalid},
		{"revoke", []events.Payload{created}, commands.RevokeToken{Name: "alice", By: "operator:admin"}, []events.Payload{revoked}, ""},
		{"revoke unknown", nil, commands.RevokeToken{Name: "bob", By: "operator:admin"}, nil, commands.CodeNoSuchToken},
		{"revoke twice: done already", []events.Payload{created, revoked}, commands.RevokeToken{Name: "alice", By: "operator:admin"}, nil, ""},
		{"revoke the second token", []events.Payload{created, revoked, events.TokenCreated{Name: "alice", TokenID: sumB[:16], SecretSHA256: sumB}},
			commands.RevokeToken{Name: "alice", By: "operator:x"}, []events.Payload{events.TokenRevoked{Name: "alice", TokenID: sumB[:16], By: "operator:x"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s commands.State
			for i, p := range tc.given {
				s.Token = commands.EvolveToken(s.Token, events.Event{Version: uint64(i + 1), Type: p.EventType()}, p)
			}
			got, err := commands.Decide(s, tc.cmd)
			if tc.code != "" {
				var rej *commands.Rejection
				if !errors.As(err, &rej) || rej.Code != tc.code {
					t.Fatalf("Decide = %v, %v; want a rejection %s", got, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Decide = %#v, want %#v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d = %#v, want %#v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// The handler appends token commands to the token's stream, and a batch
// creating one name twice is refused whole.
func TestHandlerTokens(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	h := commands.NewHandler(store, events.NewRegistry())
	evs, err := h.Execute(ctx, "controller", commands.CreateToken{Name: "admin", SecretSHA256: sumA, By: "controller"})
	if err != nil || len(evs) != 1 || evs[0].Stream != "token-admin" || evs[0].Type != events.TypeTokenCreated || evs[0].Actor != "controller" {
		t.Fatalf("create: %v, %v", evs, err)
	}
	_, err = h.ExecuteAll(ctx, "operator:admin", []commands.Command{
		commands.CreateToken{Name: "bob", SecretSHA256: sumA}, commands.CreateToken{Name: "bob", SecretSHA256: sumB},
	})
	if !errors.Is(err, commands.ErrRejected) {
		t.Fatalf("a batch creating bob twice: %v, want a rejection", err)
	}
	if tok, err := h.Token(ctx, "bob"); err != nil || tok.Created {
		t.Fatalf("bob after the refused batch: %+v, %v", tok, err)
	}
	if evs, err := h.Execute(ctx, "operator:admin", commands.RevokeToken{Name: "admin", By: "operator:admin"}); err != nil || len(evs) != 1 {
		t.Fatalf("revoke: %v, %v", evs, err)
	}
	if evs, err := h.Execute(ctx, "operator:admin", commands.RevokeToken{Name: "admin", By: "operator:admin"}); err != nil || len(evs) != 0 {
		t.Fatalf("revoke again: %v, %v; want nothing appended", evs, err)
	}
}
