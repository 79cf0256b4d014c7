package commands

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// Rejection codes of joining (IssueJoinToken, JoinNode) and of a node's bus
// users (RecordCredentials, RevokeNode).
const (
	CodeTokenUsed      = api.CodeTokenUsed
	CodeTokenExpired   = api.CodeTokenExpired
	CodeTokenOtherNode = api.CodeTokenOtherNode
	CodeTokenUnknown   = api.CodeTokenUnknown
	CodeBadPublicKey   = api.CodeBadPublicKey
)

// Access is what a node's history says of its bus users: its join tokens,
// its joins, the keys it was given and those revoked. Like Node, a value.
type Access struct {
	Tokens  map[string]JoinToken // by token id
	Keys    []string             // public keys of its users, oldest first
	Revoked map[string]bool      // public keys revoked
}

// JoinToken is an issued join token, as its events tell it.
type JoinToken struct {
	ID           string
	SecretSHA256 string
	ExpiresAt    time.Time
	// Redeemed is when the token was redeemed (node.joined's time), zero
	// while it was not; From is where the join came from.
	Redeemed time.Time
	From     string
}

// Unrevoked returns the node's public keys not revoked yet, oldest first.
func (a Access) Unrevoked() []string {
	var out []string
	for _, k := range a.Keys {
		if !a.Revoked[k] {
			out = append(out, k)
		}
	}
	return out
}

// evolveAccess folds the access events of a node's stream; at is the
// event's time.
func evolveAccess(a Access, p events.Payload, at time.Time) Access {
	switch p := p.(type) {
	case events.NodeJoinTokenIssued:
		a.Tokens = maps.Clone(a.Tokens)
		if a.Tokens == nil {
			a.Tokens = map[string]JoinToken{}
		}
		a.Tokens[p.TokenID] = JoinToken{ID: p.TokenID, SecretSHA256: p.SecretSHA256, ExpiresAt: p.ExpiresAt}
	case events.NodeJoined:
		if t, ok := a.Tokens[p.TokenID]; ok {
			a.Tokens = maps.Clone(a.Tokens)
			t.Redeemed, t.From = at, p.From
			a.Tokens[p.TokenID] = t
		}
		a.Keys = withKey(a.Keys, p.PublicKey)
	case events.NodeCredentialsIssued:
		a.Keys = withKey(a.Keys, p.PublicKey)
	case events.NodeCredentialsRevoked:
		a.Revoked = maps.Clone(a.Revoked)
		if a.Revoked == nil {
			a.Revoked = map[string]bool{}
		}
		for _, k := range p.PublicKeys {
			a.Revoked[k] = true
			a.Keys = withKey(a.Keys, k)
		}
	}
	return a
}

func withKey(keys []string, k string) []string {
	if k == "" || slices.Contains(keys, k) {
		return keys
	}
	return append(slices.Clip(keys), k)
}

// TokenID is the id a token (a join token, an API token) is named by: the
// first TokenIDLen hex digits of its secret's SHA-256 (secretSHA256, in
// hex).
func TokenID(secretSHA256 string) string {
	if len(secretSHA256) < TokenIDLen {
		return secretSHA256
	}
	return secretSHA256[:TokenIDLen]
}

// IssueJoinToken records a join token for a node, registering the node
// first if it is not. The controller makes the secret; only its SHA-256
// (hex) comes here. Now is the controller's clock; ExpiresAt must be after
// it. Never done already: each is a new token.
type IssueJoinToken struct {
	Node         string
	SecretSHA256 string
	ExpiresAt    time.Time
	Now          time.Time
	By           string
}

// JoinNode redeems a join token: the host whose user's public key is
// PublicKey joins as Node (the node the token names). Asked, when not
// empty, is the node the host asked to join as. Refused when no token of
// that secret was issued for the node (CodeTokenUnknown), when it was
// redeemed (CodeTokenUsed), expired by Now (CodeTokenExpired), or is not
// Asked's (CodeTokenOtherNode), and when the key is not a user's
// (CodeBadPublicKey). Never done already.
type JoinNode struct {
	Node         string
	Asked        string
	SecretSHA256 string
	PublicKey    string
	From         string
	AgentVersion string
	Now          time.Time
}

// RecordCredentials records credentials minted for a registered node whose
// user's public key is PublicKey. Done when the key is recorded.
type RecordCredentials struct {
	Node, PublicKey, By string
}

// RevokeNode revokes every bus user of a registered node that its history
// knows. Done when every one is revoked already (or there is none).
type RevokeNode struct {
	Node, By string
}

func (c IssueJoinToken) Stream() string    { return events.NodeStream(c.Node) }
func (c JoinNode) Stream() string          { return events.NodeStream(c.Node) }
func (c RecordCredentials) Stream() string { return events.NodeStream(c.Node) }
func (c RevokeNode) Stream() string        { return events.NodeStream(c.Node) }

func (IssueJoinToken) command()    {}
func (JoinNode) command()          {}
func (RecordCredentials) command() {}
func (RevokeNode) command()        {}

// decideAccess is Decide for the commands of this file.
func decideAccess(s State, c Command) ([]events.Payload, error) {
	switch c := c.(type) {
	case IssueJoinToken:
		if !validSHA256(c.SecretSHA256) {
			return nil, reject(CodeInvalid, "join token for %s: the secret's SHA-256 is not 64 hex digits", c.Node)
		}
		if !c.ExpiresAt.After(c.Now) {
			return nil, reject(CodeInvalid, "join token for %s: it would expire at %s, not after now (%s)", c.Node, stamp(c.ExpiresAt), stamp(c.Now))
		}
		id := TokenID(c.SecretSHA256)
		if _, ok := s.Node.Access.Tokens[id]; ok {
			return nil, reject(CodeInvalid, "join token for %s: token %s was issued already", c.Node, id)
		}
		var out []events.Payload
		if !s.Node.Registered {
			out = append(out, events.NodeRegistered{Node: c.Node})
		}
		return append(out, events.NodeJoinTokenIssued{
			Node: c.Node, TokenID: id, SecretSHA256: c.SecretSHA256, ExpiresAt: c.ExpiresAt.UTC(), By: c.By,
		}), nil

	case JoinNode:
		id := TokenID(c.SecretSHA256)
		if c.Asked != "" && c.Asked != c.Node {
			return nil, reject(CodeTokenOtherNode, "join token %s is for node %s, not %s", short(id), c.Node, short(c.Asked))
		}
		t, ok := s.Node.Access.Tokens[id]
		if !ok || !s.Node.Registered || t.SecretSHA256 != c.SecretSHA256 {
			return nil, reject(CodeTokenUnknown, "join token %s was never issued for node %s (unknown or forged): ask for one with `mesh node join-token %s`", short(id), c.Node, c.Node)
		}
		if !t.Redeemed.IsZero() {
			return nil, reject(CodeTokenUsed, "join token %s for node %s was used already, at %s from %s: ask for a new one with `mesh node join-token %s`", id, c.Node, stamp(t.Redeemed), t.From, c.Node)
		}
		if !c.Now.Before(t.ExpiresAt) {
			return nil, reject(CodeTokenExpired, "join token %s for node %s expired at %s: ask for a new one with `mesh node join-token %s`", id, c.Node, stamp(t.ExpiresAt), c.Node)
		}
		if err := checkUserKey(c.PublicKey); err != nil {
			return nil, err
		}
		if slices.Contains(s.Node.Access.Keys, c.PublicKey) {
			return nil, reject(CodeBadPublicKey, "public key %s was used by node %s before: make a new key", short(c.PublicKey), c.Node)
		}
		return one(events.NodeJoined{Node: c.Node, TokenID: id, PublicKey: c.PublicKey, From: c.From, AgentVersion: c.AgentVersion})

	case RecordCredentials:
		if err := registered(s.Node, c.Node); err != nil {
			return nil, err
		}
		if err := checkUserKey(c.PublicKey); err != nil {
			return nil, err
		}
		if slices.Contains(s.Node.Access.Keys, c.PublicKey) {
			return nil, nil
		}
		return one(events.NodeCredentialsIssued{Node: c.Node, PublicKey: c.PublicKey, By: c.By})

	case RevokeNode:
		if err := registered(s.Node, c.Node); err != nil {
			return nil, err
		}
		keys := s.Node.Access.Unrevoked()
		if len(keys) == 0 {
			return nil, nil
		}
		return one(events.NodeCredentialsRevoked{Node: c.Node, PublicKeys: keys, By: c.By})
	}
	return nil, reject(CodeInvalid, "unknown command %T", c)
}

// checkUserKey refuses what is not the shape of a NATS user's public nkey:
// 56 characters of base32 starting with U. (The adapter checks its
// checksum too.)
func checkUserKey(k string) error {
	if len(k) != 56 || k[0] != 'U' || strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		return reject(CodeBadPublicKey, "public key %s is not a NATS user's public nkey (56 characters, U...)", quote(k))
	}
	return nil
}

func validSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32 && strings.ToLower(s) == s
}

func accessNote(c Command) string {
	switch c := c.(type) {
	case RecordCredentials:
		return fmt.Sprintf("key %s of node %s is recorded already", c.PublicKey, c.Node)
	case RevokeNode:
		return fmt.Sprintf("node %s has no bus user left to revoke", c.Node)
	}
	return ""
}
