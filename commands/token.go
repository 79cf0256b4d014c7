package commands

import (
	"context"
	"fmt"
	"sync"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// API tokens (token.created, token.revoked, on stream "token-<name>"): one
// stream per operator name, each holding that operator's tokens in order.
// At most one token of a name is live (created and not revoked) at a time;
// once it is revoked, the name may be given a new token.

// CreateToken records a new API token for the operator Name. The secret is
// made and hashed by the shell (Decide is pure): the command carries only
// its SHA-256 (64 lower-case hex digits), the expiry (zero: none), who
// asks (By, the actor) and the shell's clock (Now). Refused (token-exists)
// while Name has a live token; refused (invalid) when ExpiresAt is not
// after Now (a token born expired) or more than MaxTokenTTL after it.
type CreateToken struct {
	Name         string
	SecretSHA256 string
	ExpiresAt    time.Time
	By           string
	Now          time.Time
}

// MaxTokenTTL is the longest an API token may live: 10 years (of 365
// days), 315,360,000 seconds. A longer time to live is refused, not
// converted (a count of seconds that large overflows a time.Duration).
const MaxTokenTTL = api.MaxTokenTTL

// RevokeToken revokes the live token of the operator Name, by By. Done when
// Name's last token is revoked already; refused (token-unknown) when Name
// never had one.
type RevokeToken struct {
	Name string
	By   string
}

func (c CreateToken) Stream() string { return events.TokenStream(c.Name) }
func (c RevokeToken) Stream() string { return events.TokenStream(c.Name) }
func (CreateToken) command()         {}
func (RevokeToken) command()         {}

// Rejection codes of tokens.
const (
	CodeTokenExists = api.CodeTokenExists
	CodeNoSuchToken = api.CodeNoSuchToken
)

// TokenIDLen is how many hex digits of a token's SHA-256 name it (its id).
const TokenIDLen = 16

// Token is the state of an operator's token stream: its last token.
type Token struct {
	Name    string
	Version uint64
	Created bool   // a token was ever created under this name
	ID      string // the last token's id
	Revoked bool   // the last token is revoked
}

// EvolveToken folds one event of a token stream.
func EvolveToken(s Token, ev events.Event, p events.Payload) Token {
	s.Version = ev.Version
	switch p := p.(type) {
	case events.TokenCreated:
		s.Name, s.Created, s.ID, s.Revoked = p.Name, true, p.TokenID, false
	case events.TokenRevoked:
		if p.TokenID == s.ID {
			s.Revoked = true
		}
	}
	return s
}

func tokenDecodes(typ string) bool {
	return typ == events.TypeTokenCreated || typ == events.TypeTokenRevoked
}

func decideToken(s Token, c Command) ([]events.Payload, error) {
	switch c := c.(type) {
	case CreateToken:
		if err := checkSHA256(c.SecretSHA256); err != nil {
			return nil, err
		}
		if !c.ExpiresAt.IsZero() {
			if !c.ExpiresAt.After(c.Now) {
				return nil, reject(CodeInvalid, "token for %s: it would expire at %s, not after now (%s)", short(c.Name), stamp(c.ExpiresAt), stamp(c.Now))
			}
			if c.ExpiresAt.Sub(c.Now) > MaxTokenTTL {
				return nil, reject(CodeInvalid, "token for %s: it would expire at %s, more than %d seconds (10 years) after now (%s)", short(c.Name), stamp(c.ExpiresAt), int64(MaxTokenTTL/time.Second), stamp(c.Now))
			}
		}
		if s.Created && !s.Revoked {
			return nil, reject(CodeTokenExists, "operator %s has a token already (id %s): revoke it first (mesh token revoke %s)", c.Name, s.ID, c.Name)
		}
		return one(events.TokenCreated{Name: c.Name, TokenID: TokenID(c.SecretSHA256), SecretSHA256: c.SecretSHA256, ExpiresAt: c.ExpiresAt, By: c.By})
	case RevokeToken:
		if !s.Created {
			return nil, reject(CodeNoSuchToken, "operator %s has no token", short(c.Name))
		}
		if s.Revoked {
			return nil, nil
		}
		return one(events.TokenRevoked{Name: c.Name, TokenID: s.ID, By: c.By})
	}
	return nil, reject(CodeInvalid, "unknown command %T", c)
}

func checkSHA256(sum string) error {
	if len(sum) != 64 {
		return reject(CodeInvalid, "a token's secret_sha256 is 64 hex digits, not %d", len(sum))
	}
	for i := 0; i < len(sum); i++ {
		if c := sum[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return reject(CodeInvalid, "a token's secret_sha256 is lower-case hex: byte %d is %q", i, c)
		}
	}
	return nil
}

func isTokenCommand(c Command) bool {
	switch c.(type) {
	case CreateToken, RevokeToken:
		return true
	}
	return false
}

func tokenOf(c Command) string {
	switch c := c.(type) {
	case CreateToken:
		return c.Name
	case RevokeToken:
		return c.Name
	}
	return ""
}

// tokenCache is the Handler's cache of token streams.
type tokenCache struct {
	mu     sync.Mutex
	tokens map[string]Token
}

// Token returns an operator's token stream's state, read from the store.
func (h *Handler) Token(ctx context.Context, name string) (Token, error) {
	h.tokens.mu.Lock()
	cached := h.tokens.tokens[name]
	h.tokens.mu.Unlock()
	t, err := catchUp(ctx, h, events.TokenStream(name), cached, cached.Version, tokenDecodes, EvolveToken)
	if err != nil {
		return Token{}, err
	}
	if t.Name == "" {
		t.Name = name
	}
	h.tokens.mu.Lock()
	if h.tokens.tokens == nil {
		h.tokens.tokens = map[string]Token{}
	}
	if h.tokens.tokens[name].Version < t.Version {
		h.tokens.tokens[name] = t
	}
	h.tokens.mu.Unlock()
	return t, nil
}

func (o *overlay) Token(ctx context.Context, name string) (Token, error) {
	if t, ok := o.tokens[name]; ok {
		return t, nil
	}
	return o.base.Token(ctx, name)
}

func describeToken(c Command) string {
	switch c.(type) {
	case CreateToken:
		return fmt.Sprintf("CreateToken %s", tokenOf(c))
	}
	return fmt.Sprintf("RevokeToken %s", tokenOf(c))
}
