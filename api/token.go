package api

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTokenRefused is wrapped by every refusal of a per-operator API token
// (unknown, revoked, expired): the API answers it 401.
var ErrTokenRefused = errors.New("API token refused")

// ErrTokenUnknown is the refusal of a token no token record names: the
// only refusal that leaves the bootstrap token (DATA/api-token) good, since
// it is good before the controller records it.
var ErrTokenUnknown = fmt.Errorf("%w: no such API token", ErrTokenRefused)

// TokenPrefix starts every per-operator API token's secret.
const TokenPrefix = "mtk_"

// Tokens is the controller's per-operator API tokens (mesh token): kept
// out of Service, as Access is, since only a running controller has them
// (the CLI's local mode does not).
type Tokens interface {
	// CreateToken makes a token for the operator Name; the response holds
	// its secret, shown this once (only its SHA-256 is recorded).
	CreateToken(ctx context.Context, req CreateTokenRequest) (CreateTokenResponse, error)
	// RevokeToken revokes Name's live token: refused at once from then on.
	RevokeToken(ctx context.Context, req RevokeTokenRequest) (CommandResult, error)
	// Tokens lists every token history holds, revoked ones too.
	Tokens(ctx context.Context) (TokenList, error)
}

// CreateTokenRequest asks for an API token for the operator Name, expiring
// after TTLSeconds (0: never; at most MaxTokenTTLSeconds, 10 years).
type CreateTokenRequest struct {
	Operator   string `json:"operator"`
	Name       string `json:"name"`
	TTLSeconds int64  `json:"ttl_seconds,omitempty"`
}

// MaxTokenTTL is the longest an API token may live: 10 years (of 365
// days), 315,360,000 seconds. A longer time to live is refused, not
// converted (a count of seconds that large overflows a time.Duration).
const MaxTokenTTL = 10 * 365 * 24 * time.Hour

// MaxTokenTTLSeconds is the longest time to live of an API token, in
// seconds: 10 years (MaxTokenTTL). A ttl_seconds beyond it is refused as
// it is, before it is converted to a duration.
const MaxTokenTTLSeconds = int64(MaxTokenTTL / time.Second)

// CreateTokenResponse is a new token: Token is its secret (TokenPrefix and
// the base64url of 32 random bytes), given once.
type CreateTokenResponse struct {
	Name      string    `json:"name"`
	Token     string    `json:"token"`
	TokenID   string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// RevokeTokenRequest asks to revoke the operator Name's live token.
type RevokeTokenRequest struct {
	Operator string `json:"operator"`
	Name     string `json:"name"`
}

// TokenList is every API token history holds, in creation order.
type TokenList struct {
	Tokens []TokenInfo `json:"tokens"`
}

// TokenInfo is one API token (never its secret nor its hash).
type TokenInfo struct {
	Name      string    `json:"name"`
	ID        string    `json:"id"`
	Created   time.Time `json:"created"`
	By        string    `json:"by"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	Revoked   time.Time `json:"revoked,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
}

// Validate checks the fields of a CreateTokenRequest: the operator and the
// token's name as operators are checked, a time to live of 0 or more.
func (r CreateTokenRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := CheckOperator(r.Name); err != nil {
		return invalidField("name", "%v", err)
	}
	if r.TTLSeconds < 0 || r.TTLSeconds > MaxTokenTTLSeconds {
		return invalidField("ttl_seconds", "%d: give 1 to %d (10 years), or 0 for no expiry", r.TTLSeconds, MaxTokenTTLSeconds)
	}
	return nil
}

// Validate checks the fields of a RevokeTokenRequest.
func (r RevokeTokenRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := CheckOperator(r.Name); err != nil {
		return invalidField("name", "%v", err)
	}
	return nil
}
