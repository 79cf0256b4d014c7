package controller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/projections"
)

// Per-operator API tokens (mesh token): the controller makes each secret
// (api.TokenPrefix and the base64url of 32 random bytes), records only its
// SHA-256 (token.created), and tells who a bearer is from the token table
// its runner folds beside the projections, so a token made or revoked by
// any controller of the store is known to every one of them.

// Authenticate's refusals; each wraps api.ErrTokenRefused.
var (
	ErrTokenUnknown = api.ErrTokenUnknown
	ErrTokenRevoked = fmt.Errorf("%w: the API token is revoked", api.ErrTokenRefused)
	ErrTokenExpired = fmt.Errorf("%w: the API token has expired", api.ErrTokenRefused)
)

// BootstrapTokenName is the operator the daemon records the first API
// token (DATA/api-token) under.
const BootstrapTokenName = "admin"

var _ api.Tokens = (*Controller)(nil)

// errNoTokens refuses the token calls of a controller with preloaded
// projections (the CLI's local mode): tokens are a running controller's.
func errNoTokens() error {
	return reject(commands.CodeInvalid, "this controller keeps no API tokens (local mode): run the token verbs against a running controller (--server)")
}

// hashSecret is the lower-case hex SHA-256 of secret.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Authenticate says whose the API token secret is: the operator it was
// made for. It refuses an unknown token (ErrTokenUnknown, after catching
// the token table up with the store once, for a token another controller
// just made), a revoked one (ErrTokenRevoked) and an expired one
// (ErrTokenExpired).
func (c *Controller) Authenticate(ctx context.Context, secret string) (string, error) {
	if c.tokens == nil {
		return "", ErrTokenUnknown
	}
	sum := hashSecret(secret)
	id := commands.TokenID(sum)
	t, ok := c.tokens.Lookup(id)
	if !ok {
		if err := c.Sync(ctx); err != nil {
			return "", fmt.Errorf("controller: authenticate: %w", err)
		}
		if t, ok = c.tokens.Lookup(id); !ok {
			return "", ErrTokenUnknown
		}
	}
	if subtle.ConstantTimeCompare([]byte(t.SecretSHA256), []byte(sum)) != 1 {
		return "", ErrTokenUnknown
	}
	if !t.Revoked.IsZero() {
		return "", fmt.Errorf("%w: token %s of %s was revoked at %s by %s", ErrTokenRevoked, t.ID, t.Name, t.Revoked.UTC().Format(time.RFC3339), t.RevokedBy)
	}
	if !t.ExpiresAt.IsZero() && !c.clock().Before(t.ExpiresAt) {
		return "", fmt.Errorf("%w: token %s of %s expired at %s", ErrTokenExpired, t.ID, t.Name, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return t.Name, nil
}

// NewTokenSecret makes an API token's secret: api.TokenPrefix and the
// base64url (no padding) of 32 random bytes.
func NewTokenSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("controller: token secret: %w", err)
	}
	return api.TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// CreateToken makes an API token for the operator req.Name, by
// req.Operator. The secret is in the response only.
func (c *Controller) CreateToken(ctx context.Context, req api.CreateTokenRequest) (api.CreateTokenResponse, error) {
	if c.tokens == nil {
		return api.CreateTokenResponse{}, errNoTokens()
	}
	if err := commands.CheckOperator(req.Name); err != nil {
		return api.CreateTokenResponse{}, fmt.Errorf("token name: %w", err)
	}
	if req.TTLSeconds < 0 || req.TTLSeconds > api.MaxTokenTTLSeconds {
		return api.CreateTokenResponse{}, reject(commands.CodeInvalid, "ttl_seconds is %d: a token's time to live is 1 to %d seconds (10 years), or 0 for none", req.TTLSeconds, api.MaxTokenTTLSeconds)
	}
	secret, err := NewTokenSecret()
	if err != nil {
		return api.CreateTokenResponse{}, err
	}
	sum := hashSecret(secret)
	var exp time.Time
	now := c.clock().UTC()
	if req.TTLSeconds > 0 {
		exp = now.Add(time.Duration(req.TTLSeconds) * time.Second).Truncate(time.Second)
	}
	who, err := actor(req.Operator)
	if err != nil {
		return api.CreateTokenResponse{}, err
	}
	if _, err := c.execute(ctx, req.Operator, commands.CreateToken{Name: req.Name, SecretSHA256: sum, ExpiresAt: exp, By: who, Now: now}); err != nil {
		return api.CreateTokenResponse{}, err
	}
	return api.CreateTokenResponse{Name: req.Name, Token: secret, TokenID: commands.TokenID(sum), ExpiresAt: exp}, nil
}

// RecordToken records secret as the API token of name, by by (an actor,
// e.g. "controller"), unless name has a token already: the daemon records
// the bootstrap token (DATA/api-token) so at its first start. It reports
// whether it recorded one.
func (c *Controller) RecordToken(ctx context.Context, name, secret, by string) (bool, error) {
	if c.standby.Load() {
		return false, errStandby()
	}
	if c.tokens != nil {
		// The token table knows from the projections, without reading the
		// token's stream (a start's: a store still being walked answers
		// stream reads only once the walk is done).
		if err := c.Sync(ctx); err != nil {
			return false, fmt.Errorf("controller: token %s: %w", name, err)
		}
		if c.tokens.Named(name) {
			return false, nil
		}
	}
	t, err := c.handler.Token(ctx, name)
	if err != nil {
		return false, fmt.Errorf("controller: token %s: %w", name, err)
	}
	if t.Created {
		return false, nil
	}
	_, last, err := c.append(ctx, by, []commands.Command{commands.CreateToken{Name: name, SecretSHA256: hashSecret(secret), By: by}})
	if err != nil {
		return false, err
	}
	return true, c.syncTo(ctx, last)
}

// RevokeToken revokes the live token of req.Name, by req.Operator: from
// the moment it returns, every controller of the store refuses it.
func (c *Controller) RevokeToken(ctx context.Context, req api.RevokeTokenRequest) (api.CommandResult, error) {
	if c.tokens == nil {
		return api.CommandResult{}, errNoTokens()
	}
	who, err := actor(req.Operator)
	if err != nil {
		return api.CommandResult{}, err
	}
	return c.execute(ctx, req.Operator, commands.RevokeToken{Name: req.Name, By: who})
}

// Tokens lists every API token the store holds, revoked ones too.
func (c *Controller) Tokens(ctx context.Context) (api.TokenList, error) {
	if c.tokens == nil {
		return api.TokenList{}, errNoTokens()
	}
	if err := c.Sync(ctx); err != nil {
		return api.TokenList{}, err
	}
	return api.TokenList{Tokens: tokenInfos(c.tokens.List())}, nil
}

func tokenInfos(ts []projections.TokenInfo) []api.TokenInfo {
	out := make([]api.TokenInfo, len(ts))
	for i, t := range ts {
		out[i] = api.TokenInfo{Name: t.Name, ID: t.ID, Created: t.Created, By: t.By, ExpiresAt: t.ExpiresAt, Revoked: t.Revoked, RevokedBy: t.RevokedBy}
	}
	return out
}
