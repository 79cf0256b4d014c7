package controller

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events"
)

// Minter is what the Access calls need of the bus: package bus's issuer
// and server, wired by package controllerd (the controller imports no bus).
type Minter interface {
	// Endpoint is what a join token carries: the API's URL and the hex
	// SHA-256 of its CA certificate's DER ("" for plain HTTP).
	Endpoint() (url, caFingerprint string)
	// CheckKey refuses what is not a NATS user's public key.
	CheckKey(publicKey string) error
	// NodeUser signs a user of node for publicKey: the credentials without
	// a seed (the host has it).
	NodeUser(node, publicKey string) (api.NodeCreds, error)
	// NewNodeCreds mints a new user of node, seed included, and says its
	// public key.
	NewNodeCreds(node string) (creds api.NodeCreds, publicKey string, err error)
	// Revoke makes revoked (public key → when) the bus's whole revocation
	// list, at once.
	Revoke(ctx context.Context, revoked map[string]time.Time) error
}

var _ api.Access = (*Controller)(nil)

// errNoMinter refuses the Access calls of a controller without a bus.
func errNoMinter() error {
	return reject(commands.CodeInvalid, "this controller mints no bus users (no bus attached): run the verb against a running controller (--server)")
}

// SetMinter attaches the bus's minter (daemon does, once the bus and the
// API's address are known). Until then the Access calls are refused.
func (c *Controller) SetMinter(m Minter) {
	c.access.mu.Lock()
	defer c.access.mu.Unlock()
	c.access.minter = m
}

// accessState is the controller's part of joining: the minter, and, for
// a controller on preloaded projections (no runner of its own feeding
// projections.Revocations), the revocation list read from the store so
// far.
type accessState struct {
	mu      sync.Mutex
	minter  Minter
	rand    io.Reader // nil: crypto/rand
	revoked map[string]time.Time
	scanned uint64 // the store position revoked reflects
}

func (c *Controller) minter() (Minter, error) {
	c.access.mu.Lock()
	defer c.access.mu.Unlock()
	if c.access.minter == nil {
		return nil, errNoMinter()
	}
	return c.access.minter, nil
}

// appendAccess appends one access command as who, without a push (no
// declaration changes), and waits for the projections to fold it.
func (c *Controller) appendAccess(ctx context.Context, who string, cmd commands.Command) ([]api.EventRef, error) {
	if c.standby.Load() {
		return nil, errStandby()
	}
	res, last, err := c.append(ctx, who, []commands.Command{cmd})
	if err != nil {
		return nil, err
	}
	if err := c.syncTo(ctx, last); err != nil {
		return nil, err
	}
	var refs []api.EventRef
	for _, a := range res.Results {
		refs = append(refs, a.Events...)
	}
	return refs, nil
}

// JoinToken issues a one-time join token for a node (registering it if
// needed): a new 32-byte secret, of which only the SHA-256 is recorded
// (node.join-token-issued).
func (c *Controller) JoinToken(ctx context.Context, req api.JoinTokenRequest) (api.JoinTokenResponse, error) {
	who, err := actor(req.Operator)
	if err != nil {
		return api.JoinTokenResponse{}, err
	}
	m, err := c.minter()
	if err != nil {
		return api.JoinTokenResponse{}, err
	}
	if req.TTLSeconds < 0 || req.TTLSeconds > api.MaxJoinTTLSeconds {
		return api.JoinTokenResponse{}, reject(commands.CodeInvalid, "ttl_seconds is %d: a join token lives 1 to %d seconds (7 days), or 0 for %d", req.TTLSeconds, api.MaxJoinTTLSeconds, int64(api.DefaultJoinTTL/time.Second))
	}
	ttl := api.DefaultJoinTTL
	if req.TTLSeconds > 0 {
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	secret := make([]byte, api.JoinSecretSize)
	r := c.access.rand
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, secret); err != nil {
		return api.JoinTokenResponse{}, fmt.Errorf("controller: join token for %s: %w", req.Node, err)
	}
	sum := sha256.Sum256(secret)
	now := c.clock().UTC()
	exp := now.Add(ttl).Truncate(time.Second)
	if _, err := c.appendAccess(ctx, who, commands.IssueJoinToken{
		Node: req.Node, SecretSHA256: hex.EncodeToString(sum[:]), ExpiresAt: exp, Now: now, By: who,
	}); err != nil {
		return api.JoinTokenResponse{}, err
	}
	url, ca := m.Endpoint()
	tok := api.JoinToken{URL: url, CAFingerprint: ca, Node: req.Node, Secret: base64.RawURLEncoding.EncodeToString(secret)}
	return api.JoinTokenResponse{Node: req.Node, Token: tok.String(), ExpiresAt: exp}, nil
}

// Join redeems a join token (node.joined, recorded as the agent of the
// node) and signs the host's public key into a user of the node.
func (c *Controller) Join(ctx context.Context, req api.JoinRequest) (api.JoinResponse, error) {
	tok, err := api.ParseJoinToken(req.Token)
	if err != nil {
		return api.JoinResponse{}, reject(commands.CodeTokenUnknown, "%v", err)
	}
	m, err := c.minter()
	if err != nil {
		return api.JoinResponse{}, err
	}
	secret, err := tok.SecretBytes()
	if err != nil {
		return api.JoinResponse{}, reject(commands.CodeTokenUnknown, "%v", err)
	}
	if err := m.CheckKey(req.PublicKey); err != nil {
		return api.JoinResponse{}, reject(commands.CodeBadPublicKey, "public key %.60q: %v", req.PublicKey, err)
	}
	sum := sha256.Sum256(secret)
	if _, err := c.appendAccess(ctx, "agent:"+tok.Node, commands.JoinNode{
		Node: tok.Node, Asked: req.Node, SecretSHA256: hex.EncodeToString(sum[:]), PublicKey: req.PublicKey,
		From: req.From, AgentVersion: req.AgentVersion, Now: c.clock().UTC(),
	}); err != nil {
		return api.JoinResponse{}, err
	}
	creds, err := m.NodeUser(tok.Node, req.PublicKey)
	if err != nil {
		return api.JoinResponse{}, fmt.Errorf("controller: join %s: %w", tok.Node, err)
	}
	return api.JoinResponse{Node: tok.Node, Creds: creds}, nil
}

// NodeCreds mints whole credentials for a registered node and records the
// user's key (node.credentials-issued), so that a revoke knows it.
func (c *Controller) NodeCreds(ctx context.Context, req api.NodeRequest) (api.NodeCredsResponse, error) {
	who, err := actor(req.Operator)
	if err != nil {
		return api.NodeCredsResponse{}, err
	}
	m, err := c.minter()
	if err != nil {
		return api.NodeCredsResponse{}, err
	}
	if err := events.CheckName("node", req.Node); err != nil {
		return api.NodeCredsResponse{}, reject(commands.CodeInvalid, "%v", err)
	}
	creds, pub, err := m.NewNodeCreds(req.Node)
	if err != nil {
		return api.NodeCredsResponse{}, fmt.Errorf("controller: creds for %s: %w", req.Node, err)
	}
	if _, err := c.appendAccess(ctx, who, commands.RecordCredentials{Node: req.Node, PublicKey: pub, By: who}); err != nil {
		return api.NodeCredsResponse{}, err
	}
	return api.NodeCredsResponse{Node: req.Node, Creds: creds}, nil
}

// Revoke records req.PublicKeys as users of the node
// (node.credentials-issued, each unless history knows it: credentials
// minted before that event was recorded), revokes every bus user of the
// node that history knows (node.credentials-revoked), then puts the whole
// revocation list on the bus. A revoke whose keys were all revoked before
// appends nothing and still puts the list on the bus.
func (c *Controller) Revoke(ctx context.Context, req api.RevokeRequest) (api.RevokeResponse, error) {
	who, err := actor(req.Operator)
	if err != nil {
		return api.RevokeResponse{}, err
	}
	m, err := c.minter()
	if err != nil {
		return api.RevokeResponse{}, err
	}
	for _, k := range req.PublicKeys {
		if err := m.CheckKey(k); err != nil {
			return api.RevokeResponse{}, reject(commands.CodeBadPublicKey, "public key %.60q: %v", k, err)
		}
	}
	before, err := c.handler.Node(ctx, req.Node)
	if err != nil {
		return api.RevokeResponse{}, err
	}
	for _, k := range req.PublicKeys {
		if _, err := c.appendAccess(ctx, who, commands.RecordCredentials{Node: req.Node, PublicKey: k, By: who}); err != nil {
			return api.RevokeResponse{}, err
		}
	}
	if _, err := c.appendAccess(ctx, who, commands.RevokeNode{Node: req.Node, By: who}); err != nil {
		return api.RevokeResponse{}, err
	}
	after, err := c.handler.Node(ctx, req.Node)
	if err != nil {
		return api.RevokeResponse{}, err
	}
	list, err := c.Revocations(ctx)
	if err != nil {
		return api.RevokeResponse{}, err
	}
	if err := m.Revoke(ctx, list); err != nil {
		return api.RevokeResponse{}, fmt.Errorf("controller: revoke %s: recorded, but the bus did not take it (the next start carries it): %w", req.Node, err)
	}
	res := api.RevokeResponse{Node: req.Node, Revoked: []string{}, All: []string{}}
	for _, k := range after.Access.Keys {
		if after.Access.Revoked[k] {
			res.All = append(res.All, k)
			if !before.Access.Revoked[k] {
				res.Revoked = append(res.Revoked, k)
			}
		}
	}
	return res, nil
}

// Revocations is the bus's revocation list as the store's history gives
// it: every public key of a node.credentials-revoked, with that event's
// time, as of the store's head. The runner folds it (projections.Revocations,
// carried by the checkpoints, so a resumed controller has it without
// reading the whole store); a controller on preloaded projections reads
// the store from where its last call stopped.
func (c *Controller) Revocations(ctx context.Context) (map[string]time.Time, error) {
	if c.revoked != nil {
		if err := c.Sync(ctx); err != nil {
			return nil, err
		}
		return c.revoked.List(), nil
	}
	c.access.mu.Lock()
	defer c.access.mu.Unlock()
	if c.access.revoked == nil {
		c.access.revoked = map[string]time.Time{}
	}
	pos, err := ScanRevocations(ctx, c.store, c.reg, c.access.scanned, c.access.revoked)
	if err != nil {
		return nil, err
	}
	c.access.scanned = pos
	out := make(map[string]time.Time, len(c.access.revoked))
	for k, v := range c.access.revoked {
		out[k] = v
	}
	return out, nil
}

// scanPage is how many events ScanRevocations reads at once.
const scanPage = 4096

// ScanRevocations adds to into the revocations of the store's events after
// position after (each key with the time of its first revocation), and
// returns the position it read to. Only node.credentials-revoked payloads
// are decoded.
func ScanRevocations(ctx context.Context, store events.Store, reg *events.Registry, after uint64, into map[string]time.Time) (uint64, error) {
	for {
		evs, err := store.ReadAll(ctx, after, scanPage)
		if err != nil {
			return after, fmt.Errorf("controller: revocations: %w", err)
		}
		for _, ev := range evs {
			after = ev.Position
			if ev.Type != events.TypeNodeCredentialsRevoked {
				continue
			}
			p, err := reg.Decode(ev)
			if err != nil {
				return after, fmt.Errorf("controller: revocations: %w", err)
			}
			if r, ok := p.(events.NodeCredentialsRevoked); ok {
				for _, k := range r.PublicKeys {
					if was, ok := into[k]; !ok || ev.At.Before(was) {
						into[k] = ev.At
					}
				}
			}
		}
		if len(evs) < scanPage {
			return after, nil
		}
	}
}

// accessOf is what node show lists of a node's access: nil when its
// history has none.
func accessOf(a commands.Access) *api.NodeAccess {
	if len(a.Tokens) == 0 && len(a.Keys) == 0 {
		return nil
	}
	out := &api.NodeAccess{Tokens: []api.JoinTokenView{}, Keys: []api.KeyView{}}
	for _, t := range a.Tokens {
		out.Tokens = append(out.Tokens, api.JoinTokenView{ID: t.ID, ExpiresAt: t.ExpiresAt, UsedAt: t.Redeemed, From: t.From})
	}
	slices.SortFunc(out.Tokens, func(x, y api.JoinTokenView) int {
		return cmp.Or(x.ExpiresAt.Compare(y.ExpiresAt), strings.Compare(x.ID, y.ID))
	})
	for _, k := range a.Keys {
		out.Keys = append(out.Keys, api.KeyView{PublicKey: k, Revoked: a.Revoked[k]})
	}
	return out
}
