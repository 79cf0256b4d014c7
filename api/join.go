package api

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// JoinTokenPrefix starts every join token.
const JoinTokenPrefix = "MJ1."

// ErrBadJoinToken means a string is not a join token: wrong prefix, not
// base64url, not its JSON, or a field missing or malformed.
var ErrBadJoinToken = errors.New("not a join token")

// JoinToken is what `mesh node join-token` prints and `mesh agent join`
// takes: where the controller is, how to know it, the node and the
// one-time secret. Its string form is JoinTokenPrefix and the
// base64url (no padding) of the JSON
//
//	{"u": URL, "ca": CAFingerprint, "n": Node, "s": Secret}
//
// The controller stores only the SHA-256 of the secret's bytes.
type JoinToken struct {
	URL string `json:"u"` // the controller's API URL
	// CAFingerprint is the hex SHA-256 of the DER of the CA certificate the
	// API's certificate chains to; "" when the API is plain HTTP.
	CAFingerprint string `json:"ca"`
	Node          string `json:"n"`
	Secret        string `json:"s"` // 32 random bytes, base64url without padding
}

// String is the token's one-line form.
func (t JoinToken) String() string {
	b, _ := json.Marshal(t) // strings only: never fails
	return JoinTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// maxJoinToken bounds a token's length: a URL, a node name and two hashes.
const maxJoinToken = 4096

// ParseJoinToken reads a token's string form, refusing (ErrBadJoinToken,
// naming what is wrong) anything else.
func ParseJoinToken(s string) (JoinToken, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxJoinToken {
		return JoinToken{}, fmt.Errorf("%w: %d bytes, over %d", ErrBadJoinToken, len(s), maxJoinToken)
	}
	body, ok := strings.CutPrefix(s, JoinTokenPrefix)
	if !ok {
		return JoinToken{}, fmt.Errorf("%w: it does not start with %s", ErrBadJoinToken, JoinTokenPrefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return JoinToken{}, fmt.Errorf("%w: %v", ErrBadJoinToken, err)
	}
	var t JoinToken
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return JoinToken{}, fmt.Errorf("%w: %v", ErrBadJoinToken, err)
	}
	if dec.More() {
		return JoinToken{}, fmt.Errorf("%w: data after its JSON", ErrBadJoinToken)
	}
	switch {
	case !strings.HasPrefix(t.URL, "https://") && !strings.HasPrefix(t.URL, "http://"):
		return JoinToken{}, fmt.Errorf("%w: url %.60q is not http(s)://", ErrBadJoinToken, t.URL)
	case t.Node == "":
		return JoinToken{}, fmt.Errorf("%w: it names no node", ErrBadJoinToken)
	case t.CAFingerprint != "" && !isHexSHA256(t.CAFingerprint):
		return JoinToken{}, fmt.Errorf("%w: ca is not 64 lower-case hex digits", ErrBadJoinToken)
	}
	if sec, err := base64.RawURLEncoding.DecodeString(t.Secret); err != nil || len(sec) != JoinSecretSize {
		return JoinToken{}, fmt.Errorf("%w: the secret is not %d bytes of base64url", ErrBadJoinToken, JoinSecretSize)
	}
	return t, nil
}

// JoinSecretSize is the length of a join token's secret, in bytes.
const JoinSecretSize = 32

// SecretBytes is the token's secret, decoded (ParseJoinToken checked it).
func (t JoinToken) SecretBytes() ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(t.Secret)
	if err != nil || len(b) != JoinSecretSize {
		return nil, fmt.Errorf("%w: the secret is not %d bytes of base64url", ErrBadJoinToken, JoinSecretSize)
	}
	return b, nil
}

func isHexSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32 && strings.ToLower(s) == s
}

// Access is the controller's side of joining and revoking: implemented by
// controller.Controller and by Client. It is not part of Service: the CLI's
// local mode has no bus to mint users for.
type Access interface {
	// JoinToken issues a one-time join token for a node, registering the
	// node if needed (POST /v1/nodes/{node}/join-token).
	JoinToken(ctx context.Context, req JoinTokenRequest) (JoinTokenResponse, error)
	// Join redeems a join token: the host's user public key is signed
	// into a bus user of the node (POST /v1/join, authorised by the token
	// alone).
	Join(ctx context.Context, req JoinRequest) (JoinResponse, error)
	// NodeCreds mints whole credentials for a registered node, seed
	// included (POST /v1/nodes/{node}/creds).
	NodeCreds(ctx context.Context, req NodeRequest) (NodeCredsResponse, error)
	// Revoke revokes every bus user of a node, at once on the bus
	// (POST /v1/nodes/{node}/revoke), and first records as the node's
	// the public keys the request names (node.credentials-issued).
	Revoke(ctx context.Context, req RevokeRequest) (RevokeResponse, error)
}

// JoinTokenRequest asks for a join token for Node, good for TTLSeconds
// (DefaultJoinTTL when 0, at most MaxJoinTTL).
type JoinTokenRequest struct {
	Operator   string `json:"operator"`
	Node       string `json:"node"`
	TTLSeconds int64  `json:"ttl_seconds,omitempty"`
}

// Join token lifetimes. A ttl_seconds is compared with MaxJoinTTLSeconds
// as it is, before it is converted to a duration (which a count of
// seconds past 292 years overflows).
const (
	DefaultJoinTTL    = 15 * time.Minute
	MaxJoinTTL        = 7 * 24 * time.Hour
	MaxJoinTTLSeconds = int64(MaxJoinTTL / time.Second)
)

// JoinTokenResponse is the token's string form and when it expires.
type JoinTokenResponse struct {
	Node      string    `json:"node"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// JoinRequest redeems a token. PublicKey is the host's new NATS user nkey
// (U...); Node, when given, is the node the host means to join as (a token
// of another node is then refused as such).
type JoinRequest struct {
	Token        string `json:"token"`
	PublicKey    string `json:"public_key"`
	AgentVersion string `json:"agent_version,omitempty"`
	Node         string `json:"node,omitempty"`
	// From is the caller's address as the controller sees it: set by the
	// HTTP handler, never read from the body.
	From string `json:"-"`
}

// NodeCreds is a node's credentials for the bus, in the JSON of bus.Creds
// (package bus documents the fields). Join answers it without the seed,
// which never left the host: the agent adds its own.
type NodeCreds struct {
	Version int      `json:"version"`
	Node    string   `json:"node"`
	URLs    []string `json:"urls"`
	JWT     string   `json:"jwt"`
	Seed    string   `json:"seed,omitempty"`
	CA      string   `json:"ca,omitempty"`
}

// JoinResponse is what a join is given.
type JoinResponse struct {
	Node  string    `json:"node"`
	Creds NodeCreds `json:"creds"`
}

// NodeCredsResponse is whole credentials, seed included.
type NodeCredsResponse struct {
	Node  string    `json:"node"`
	Creds NodeCreds `json:"creds"`
}

// RevokeRequest revokes every bus user of Node history knows, and the
// users of PublicKeys (NATS user public keys, U...): credentials minted
// for Node before node.credentials-issued was recorded, which history
// does not know. Each is recorded as Node's (node.credentials-issued)
// before the revocation.
type RevokeRequest struct {
	Operator   string   `json:"operator"`
	Node       string   `json:"node"`
	PublicKeys []string `json:"public_keys,omitempty"`
}

// Validate checks the request's fields.
func (r RevokeRequest) Validate() error { return checkOperator(r.Operator) }

// RevokeResponse lists the public keys revoked by this request (none when
// every one was revoked before) and every key revoked for the node.
type RevokeResponse struct {
	Node    string   `json:"node"`
	Revoked []string `json:"revoked"`
	All     []string `json:"all"`
}

// Validate checks the request's fields.
func (r JoinTokenRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if r.TTLSeconds < 0 || r.TTLSeconds > MaxJoinTTLSeconds {
		return invalidField("ttl_seconds", "%d: give 1 to %d (7 days), or 0 for %d", r.TTLSeconds, MaxJoinTTLSeconds, int64(DefaultJoinTTL/time.Second))
	}
	return nil
}

// Validate checks the request's fields.
func (r JoinRequest) Validate() error {
	if r.Token == "" {
		return invalidField("token", "the request has none")
	}
	if r.PublicKey == "" {
		return invalidField("public_key", "the request has none")
	}
	if err := checkText("public_key", r.PublicKey, 128); err != nil {
		return err
	}
	if err := checkText("agent_version", r.AgentVersion, 128); err != nil {
		return err
	}
	return checkRef("node", r.Node)
}
