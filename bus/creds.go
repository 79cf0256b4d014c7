package bus

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/jwt/v2"

	"meshplane/internal/atomicfile"
)

// ErrBadCreds means a credentials file does not decode or lacks a field.
var ErrBadCreds = errors.New("bus: bad credentials file")

// credsVersion is the version of the credentials file format written here.
const credsVersion = 1

// Creds is what an agent needs to reach the bus as its node: written by
// `mesh node register NAME --creds FILE` and read by `mesh agent --creds
// FILE`.
//
// The file is JSON, mode 0600 (it holds a secret, the user's seed):
//
//	{
//	  "version": 1,
//	  "node": "node-1",                      the node these credentials are for
//	  "urls": ["tls://10.0.0.1:4222"],       the bus's URLs, tried in turn
//	  "jwt": "eyJ0...",                      the node's NATS user JWT, named "node:<node>",
//	                                         with NodePermissions
//	  "seed": "SUA...",                      the user's nkey seed: the secret
//	  "ca": "-----BEGIN CERTIFICATE-----..." PEM of the CA that signed the bus's
//	                                         certificate, when it is a private one
//	                                         (absent: the system's roots, or no TLS)
//	}
//
// Fields may be added, never renamed. NATSCreds gives the same user in the
// NATS .creds format, for the nats CLI.
type Creds struct {
	Version int      `json:"version"`
	Node    string   `json:"node"`
	URLs    []string `json:"urls"`
	JWT     string   `json:"jwt"`
	Seed    string   `json:"seed"`
	CA      string   `json:"ca,omitempty"`
}

// NewCreds makes node's credentials: a new user from issuer, and the bus's
// URLs and CA (PEM, or nil).
func NewCreds(issuer *Issuer, node string, urls []string, ca []byte) (Creds, error) {
	if len(urls) == 0 {
		return Creds{}, fmt.Errorf("bus: creds for %s: no bus URL", node)
	}
	u, err := issuer.Node(node)
	if err != nil {
		return Creds{}, err
	}
	c := Creds{Version: credsVersion, Node: node, URLs: urls, JWT: u.JWT, Seed: u.Seed, CA: string(ca)}
	return c, c.check()
}

// check says what is missing or wrong in c.
func (c Creds) check() error {
	switch {
	case c.Version != credsVersion:
		return fmt.Errorf("%w: version %d, want %d", ErrBadCreds, c.Version, credsVersion)
	case len(c.URLs) == 0:
		return fmt.Errorf("%w: no urls", ErrBadCreds)
	case c.JWT == "" || c.Seed == "":
		return fmt.Errorf("%w: no jwt or seed", ErrBadCreds)
	}
	if err := ValidNode(c.Node); err != nil {
		return fmt.Errorf("%w: %w", ErrBadCreds, err)
	}
	uc, err := jwt.DecodeUserClaims(c.JWT)
	if err != nil {
		return fmt.Errorf("%w: jwt: %v", ErrBadCreds, err)
	}
	if uc.Name != "node:"+c.Node {
		return fmt.Errorf("%w: the jwt is the user %q, not node %s's", ErrBadCreds, uc.Name, c.Node)
	}
	if c.CA != "" {
		if ok := x509.NewCertPool().AppendCertsFromPEM([]byte(c.CA)); !ok {
			return fmt.Errorf("%w: ca holds no PEM certificate", ErrBadCreds)
		}
	}
	return nil
}

// User returns the user the credentials hold.
func (c Creds) User() User { return User{JWT: c.JWT, Seed: c.Seed} }

// NATSCreds returns the user in the NATS .creds format (what `nats --creds`
// and nats.UserCredentials read).
func (c Creds) NATSCreds() ([]byte, error) {
	return jwt.FormatUserConfig(c.JWT, []byte(c.Seed))
}

// WriteCreds writes c to path with mode 0600, atomically (a temporary file
// renamed over path).
func WriteCreds(path string, c Creds) error {
	if err := c.check(); err != nil {
		return fmt.Errorf("bus: write %s: %w", path, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("bus: write %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("bus: write %s: %w", path, err)
	}
	return nil
}

// LoadCreds reads credentials written by WriteCreds. A file others can read
// is refused: it holds a secret.
func LoadCreds(path string) (Creds, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Creds{}, fmt.Errorf("bus: load creds: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Creds{}, fmt.Errorf("bus: load creds %s: mode %04o, want 0600: the file holds a secret", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Creds{}, fmt.Errorf("bus: load creds: %w", err)
	}
	var c Creds
	if err := json.Unmarshal(b, &c); err != nil {
		return Creds{}, fmt.Errorf("bus: load creds %s: %w: %v", path, ErrBadCreds, err)
	}
	if err := c.check(); err != nil {
		return Creds{}, fmt.Errorf("bus: load creds %s: %w", path, err)
	}
	return c, nil
}

// CredsUser reads a node's credentials file (LoadCreds) and says its node
// and the public key of its user: what `mesh node revoke --creds` revokes
// of credentials minted before their key was recorded.
func CredsUser(path string) (node, publicKey string, err error) {
	c, err := LoadCreds(path)
	if err != nil {
		return "", "", err
	}
	pub, err := UserPublicKey(c.JWT)
	if err != nil {
		return "", "", fmt.Errorf("bus: creds %s: %w", path, err)
	}
	return c.Node, pub, nil
}
