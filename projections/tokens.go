package projections

import (
	"slices"
	"strings"
	"sync"
	"time"

	"meshplane/events"
)

// Tokens is the table of API tokens (token.created, token.revoked): every
// token ever made, by id, with the SHA-256 of its secret, so that a
// controller tells who a bearer token is from history alone. It is not in a
// Set (no snapshot, no rebuild): the controller's runner feeds it beside
// the Set's projections.
type Tokens struct {
	mu   sync.RWMutex
	byID map[string]*TokenInfo
	ids  []string // in creation order
}

// TokenInfo is one token as history tells it.
type TokenInfo struct {
	Name         string    `json:"name"`
	ID           string    `json:"id"`
	SecretSHA256 string    `json:"secret_sha256"`
	Created      time.Time `json:"created"`
	By           string    `json:"by"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
	Revoked      time.Time `json:"revoked,omitzero"`
	RevokedBy    string    `json:"revoked_by,omitempty"`
}

// NewTokens returns an empty token table.
func NewTokens() *Tokens { return &Tokens{byID: map[string]*TokenInfo{}} }

// Name is "tokens".
func (t *Tokens) Name() string { return "tokens" }

// Reset empties the table.
func (t *Tokens) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byID, t.ids = map[string]*TokenInfo{}, nil
}

// Fold folds token.created and token.revoked. A token id made twice keeps
// its first record (the store's history is the truth; a second secret
// under one id could only be a forgery by hand).
func (t *Tokens) Fold(ev events.Event, p events.Payload) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch p := p.(type) {
	case events.TokenCreated:
		if _, ok := t.byID[p.TokenID]; ok || p.TokenID == "" {
			return nil
		}
		name := p.Name
		if name == "" {
			name = strings.TrimPrefix(ev.Stream, "token-")
		}
		t.byID[p.TokenID] = &TokenInfo{Name: name, ID: p.TokenID, SecretSHA256: p.SecretSHA256, Created: ev.At, By: p.By, ExpiresAt: p.ExpiresAt}
		t.ids = append(t.ids, p.TokenID)
	case events.TokenRevoked:
		if x, ok := t.byID[p.TokenID]; ok && x.Revoked.IsZero() {
			x.Revoked, x.RevokedBy = ev.At, p.By
		}
	}
	return nil
}

// Lookup is the token with id, if history holds it.
func (t *Tokens) Lookup(id string) (TokenInfo, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	x, ok := t.byID[id]
	if !ok {
		return TokenInfo{}, false
	}
	return *x, true
}

// Named reports whether a token of name was ever made (revoked or not).
func (t *Tokens) Named(name string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, x := range t.byID {
		if x.Name == name {
			return true
		}
	}
	return false
}

// Live is the live (not revoked) token of name, if any.
func (t *Tokens) Live(name string) (TokenInfo, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, id := range slices.Backward(t.ids) {
		if x := t.byID[id]; x.Name == name && x.Revoked.IsZero() {
			return *x, true
		}
	}
	return TokenInfo{}, false
}

// List is every token, in creation order.
func (t *Tokens) List() []TokenInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]TokenInfo, len(t.ids))
	for i, id := range t.ids {
		out[i] = *t.byID[id]
	}
	return out
}

// MarshalJSON is the table, in creation order.
func (t *Tokens) MarshalJSON() ([]byte, error) { return marshal(t.List()) }

var _ Projection = (*Tokens)(nil)
