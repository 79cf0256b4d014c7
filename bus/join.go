package bus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// ErrNoAuthority means a bus directory holds no trust root (its seeds are
// missing): the directory is not the controller's.
var ErrNoAuthority = errors.New("bus: no trust root")

// ErrNotUserKey means a public key is not a NATS user's (U...).
var ErrNotUserKey = errors.New("bus: not a NATS user public key")

// OpenAuthority reads the trust root from dir, as LoadAuthority does, but
// makes nothing: a directory without the seeds is refused (ErrNoAuthority,
// naming it). It is for the verbs that mint from a controller's data
// directory, which must never make a trust root of their own.
func OpenAuthority(dir string) (*Authority, error) {
	for _, f := range []string{operatorSeedFile, systemSeedFile, accountSeedFile} {
		path := filepath.Join(dir, f)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s: %s is missing (is this the controller's data directory?)", ErrNoAuthority, dir, f)
		} else if err != nil {
			return nil, fmt.Errorf("bus: authority: %w", err)
		}
	}
	return LoadAuthority(dir)
}

// NodeFor signs a user JWT of node for the user whose public nkey is
// publicKey (U...): what a joining host is given; its seed never leaves
// the host. The user has NodePermissions(node) and nothing more, as
// Node's.
func (i *Issuer) NodeFor(node, publicKey string) (string, error) {
	if err := ValidNode(node); err != nil {
		return "", err
	}
	if !nkeys.IsValidPublicUserKey(publicKey) {
		return "", fmt.Errorf("%w: %.60q", ErrNotUserKey, publicKey)
	}
	uc := jwt.NewUserClaims(publicKey)
	uc.Name = "node:" + node
	uc.IssuerAccount = i.account
	uc.Permissions = NodePermissions(node)
	tok, err := uc.Encode(i.key)
	if err != nil {
		return "", fmt.Errorf("bus: sign user node:%s: %w", node, err)
	}
	return tok, nil
}

// UserPublicKey is the public nkey of the user a user JWT is for.
func UserPublicKey(userJWT string) (string, error) {
	uc, err := jwt.DecodeUserClaims(userJWT)
	if err != nil {
		return "", fmt.Errorf("bus: user jwt: %w", err)
	}
	return uc.Subject, nil
}
