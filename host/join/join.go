// Package join is the host's side of joining a mesh: `mesh agent join URL
// --token T --data DIR` (and `mesh agent install`, which joins first).
//
// A join token (api.JoinToken, minted by `mesh node join-token NODE`)
// names the node, the controller's API URL, a one-time secret and the
// SHA-256 fingerprint of the controller's CA certificate. The join, as k3s
// pins its server with its token's CA hash:
//
//  1. fetches the CA (GET /v1/join/ca) over TLS without verifying, and
//     refuses it unless its fingerprint is the token's: a server that is not
//     the controller learns nothing but the request;
//  2. makes the node's NATS user key (an nkey) here, on the host;
//  3. sends the token and only the public key (POST /v1/join), verifying the
//     controller against that CA alone; the controller signs a user JWT
//     limited to the node's subjects and answers it with the bus's URLs and
//     CA;
//  4. writes DATA/node.creds (bus.Creds, mode 0600: the seed never left the
//     host) and DATA/join.json (what was joined, when, through which
//     controller).
//
// A data directory already joined is left as it is (Result.Already): a
// second join, or an install run twice, neither spends a new token nor
// replaces a working key. To join again with a new key (after `mesh node
// revoke`), remove DATA/node.creds first.
//
// It touches files: the two in the data directory.
package join

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nkeys"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/internal/atomicfile"
)

// Files in an agent's data directory.
const (
	// CredsFile is the node's bus credentials (bus.Creds' format), which
	// `mesh agent --data DIR` uses when no --creds is given.
	CredsFile = "node.creds"
	// InfoFile records the join (Info, JSON), mode 0644.
	InfoFile = "join.json"
)

// ErrFingerprint means the server's CA is not the one the token names.
var ErrFingerprint = errors.New("join: the controller's CA is not the token's")

// ErrInsecure means a join over plain HTTP beyond loopback without
// Options.Insecure.
var ErrInsecure = errors.New("join: the controller has no TLS")

// Options say what to join and where to keep it.
type Options struct {
	// URL is the controller's API URL as the host reaches it; "" for the
	// token's.
	URL string
	// Token is the join token (MJ1...).
	Token string
	// Data is the agent's data directory.
	Data string
	// Insecure allows a token without a CA fingerprint (a controller on
	// plain HTTP) beyond loopback.
	Insecure bool
	// AgentVersion is sent with the join and recorded in node.joined.
	AgentVersion string
	// Now stamps join.json; nil is time.Now.
	Now func() time.Time
}

// Result is what a join did.
type Result struct {
	Node  string // the node joined as
	Creds string // the credentials' path, DATA/node.creds
	// Already is set when DATA held credentials already: nothing was sent.
	Already bool
}

// Info is DATA/join.json.
type Info struct {
	Node          string    `json:"node"`
	Controller    string    `json:"controller"`     // the API URL joined through
	CAFingerprint string    `json:"ca_fingerprint"` // "" for plain HTTP
	PublicKey     string    `json:"public_key"`     // the node's user key (U...)
	JoinedAt      time.Time `json:"joined_at"`
}

// Join joins o.Data to the mesh with o.Token (see the package comment).
func Join(ctx context.Context, o Options) (Result, error) {
	tok, err := api.ParseJoinToken(o.Token)
	if err != nil {
		return Result{}, fmt.Errorf("join: %w", err)
	}
	if o.Data == "" {
		return Result{}, errors.New("join: no data directory")
	}
	credsPath := filepath.Join(o.Data, CredsFile)
	if c, err := bus.LoadCreds(credsPath); err == nil {
		if c.Node != tok.Node {
			return Result{}, fmt.Errorf("join: %s holds the credentials of node %s, not %s: give another --data, or remove it to join as %s", credsPath, c.Node, tok.Node, tok.Node)
		}
		return Result{Node: c.Node, Creds: credsPath, Already: true}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("join: %w", err)
	}
	base := o.URL
	if base == "" {
		base = tok.URL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Result{}, fmt.Errorf("join: controller URL %q: want https://HOST:PORT", base)
	}
	var opts []httpapi.ClientOption
	var caPEM []byte
	switch {
	case tok.CAFingerprint != "":
		if u.Scheme != "https" {
			return Result{}, fmt.Errorf("join: the token names a CA: the controller's URL must be https://, not %s", base)
		}
		if caPEM, err = fetchCA(ctx, base, tok.CAFingerprint); err != nil {
			return Result{}, err
		}
		opts = append(opts, httpapi.WithCA(caPEM))
	case u.Scheme == "https":
		// No CA in the token: the controller's certificate is from a
		// public CA, verified against the system's roots.
	case !o.Insecure && !loopback(u.Hostname()):
		return Result{}, fmt.Errorf("%w: %s is plain HTTP and not loopback (give --insecure to join over it anyway)", ErrInsecure, base)
	}
	c, err := httpapi.NewClient(base, "", opts...)
	if err != nil {
		return Result{}, fmt.Errorf("join: %w", err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return Result{}, fmt.Errorf("join: make the node's key: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return Result{}, fmt.Errorf("join: make the node's key: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return Result{}, fmt.Errorf("join: make the node's key: %w", err)
	}
	resp, err := c.Join(ctx, api.JoinRequest{Token: o.Token, PublicKey: pub, AgentVersion: o.AgentVersion, Node: tok.Node})
	if err != nil {
		return Result{}, fmt.Errorf("join %s as %s: %w", base, tok.Node, err)
	}
	cr := resp.Creds
	if resp.Node != tok.Node || cr.Node != tok.Node {
		return Result{}, fmt.Errorf("join %s as %s: the controller answered credentials for %q", base, tok.Node, cr.Node)
	}
	creds := bus.Creds{Version: cr.Version, Node: cr.Node, URLs: cr.URLs, JWT: cr.JWT, Seed: string(seed), CA: cr.CA}
	if got, err := bus.UserPublicKey(creds.JWT); err != nil || got != pub {
		return Result{}, fmt.Errorf("join %s as %s: the controller's JWT is not for the key sent (%v)", base, tok.Node, err)
	}
	if err := os.MkdirAll(o.Data, 0o700); err != nil {
		return Result{}, fmt.Errorf("join: %w", err)
	}
	if err := bus.WriteCreds(credsPath, creds); err != nil {
		return Result{}, fmt.Errorf("join: %w", err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	info := Info{Node: tok.Node, Controller: base, CAFingerprint: tok.CAFingerprint, PublicKey: pub, JoinedAt: now().UTC()}
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(o.Data, InfoFile), append(b, '\n'), 0o644); err != nil {
		return Result{}, fmt.Errorf("join: %w", err)
	}
	return Result{Node: tok.Node, Creds: credsPath}, nil
}

// fetchCA reads the controller's CA over TLS without verifying (there is
// nothing to verify against yet) and keeps it only if its fingerprint is
// want.
func fetchCA(ctx context.Context, base, want string) ([]byte, error) {
	blind, err := httpapi.NewClient(base, "", httpapi.WithTLSConfig(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})) // #nosec G402: pinned by fingerprint below
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	ca, err := blind.JoinCA(ctx)
	if err != nil {
		return nil, fmt.Errorf("join: fetch the controller's CA from %s: %w", base, err)
	}
	got, err := httpapi.CAFingerprint(ca)
	if err != nil {
		return nil, fmt.Errorf("join: the CA %s served: %w", base, err)
	}
	if got != want {
		return nil, fmt.Errorf("%w: %s served a CA of fingerprint %s, the token names %s", ErrFingerprint, base, got, want)
	}
	return ca, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ReadInfo reads DATA/join.json.
func ReadInfo(data string) (Info, error) {
	b, err := os.ReadFile(filepath.Join(data, InfoFile))
	if err != nil {
		return Info{}, fmt.Errorf("join: %w", err)
	}
	var in Info
	if err := json.Unmarshal(b, &in); err != nil {
		return Info{}, fmt.Errorf("join: %s: %w", filepath.Join(data, InfoFile), err)
	}
	return in, nil
}
