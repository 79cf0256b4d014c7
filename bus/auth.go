package bus

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"meshplane/internal/atomicfile"
)

// The on-disk form of the embedded bus's trust root, in the bus directory
// (DATA/bus):
//
//	operator.nk        the operator's seed (SO...)
//	system-account.nk  the system account's seed (SA...)
//	mesh-account.nk    the mesh account's seed (SA...): it signs every user
//
// Each file holds one nkey seed as text and a newline, mode 0600, written
// once, when the bus first starts, and never rewritten. The JWTs (operator,
// accounts) are signed anew from them at every start. The mesh account's
// public key names its JetStream directory, so losing mesh-account.nk loses
// the bucket and the stream, and every node's credentials: back it up with
// the store.
const (
	operatorSeedFile = "operator.nk"
	systemSeedFile   = "system-account.nk"
	accountSeedFile  = "mesh-account.nk"
)

// Authority is the embedded bus's trust root: an operator, the system
// account and the mesh account, which every user (the controller, each node)
// belongs to.
type Authority struct {
	operator, system, account nkeys.KeyPair
}

// LoadAuthority reads the trust root from dir, making any key that is not
// there yet.
func LoadAuthority(dir string) (*Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bus: authority: %w", err)
	}
	var a Authority
	var err error
	if a.operator, err = loadOrMakeSeed(filepath.Join(dir, operatorSeedFile), nkeys.PrefixByteOperator); err != nil {
		return nil, err
	}
	if a.system, err = loadOrMakeSeed(filepath.Join(dir, systemSeedFile), nkeys.PrefixByteAccount); err != nil {
		return nil, err
	}
	if a.account, err = loadOrMakeSeed(filepath.Join(dir, accountSeedFile), nkeys.PrefixByteAccount); err != nil {
		return nil, err
	}
	return &a, nil
}

func loadOrMakeSeed(path string, prefix nkeys.PrefixByte) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		kp, err := nkeys.CreatePair(prefix)
		if err != nil {
			return nil, fmt.Errorf("bus: make %s: %w", path, err)
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, fmt.Errorf("bus: make %s: %w", path, err)
		}
		if err := atomicfile.WriteFile(path, append(seed, '\n'), 0o600); err != nil {
			return nil, fmt.Errorf("bus: make %s: %w", path, err)
		}
		return kp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bus: read %s: %w", path, err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("bus: read %s: %w", path, err)
	}
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicKey(pub) || nkeys.Prefix(pub) != prefix {
		return nil, fmt.Errorf("bus: read %s: not a seed of the expected kind", path)
	}
	return kp, nil
}

// AccountPublicKey is the mesh account's public key (A...).
func (a *Authority) AccountPublicKey() string { return mustPub(a.account) }

// Issuer returns the issuer of the mesh account's users.
func (a *Authority) Issuer() *Issuer { return &Issuer{key: a.account} }

// claims returns the operator JWT and the system and mesh account JWTs;
// the mesh account's revokes the users of revoked (public key → when).
func (a *Authority) claims(revoked map[string]time.Time) (op *jwt.OperatorClaims, accounts map[string]string, err error) {
	sysPub, accPub := mustPub(a.system), mustPub(a.account)
	op = jwt.NewOperatorClaims(mustPub(a.operator))
	op.Name = "meshplane"
	op.SystemAccount = sysPub
	opJWT, err := op.Encode(a.operator)
	if err != nil {
		return nil, nil, fmt.Errorf("bus: sign operator: %w", err)
	}
	if op, err = jwt.DecodeOperatorClaims(opJWT); err != nil {
		return nil, nil, fmt.Errorf("bus: operator: %w", err)
	}
	sys := jwt.NewAccountClaims(sysPub)
	sys.Name = "SYS"
	mesh := jwt.NewAccountClaims(accPub)
	mesh.Name = "MESH"
	mesh.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: AccountMaxConsumers}
	for pub, at := range revoked {
		mesh.RevokeAt(pub, at)
	}
	accounts = map[string]string{}
	for _, ac := range []*jwt.AccountClaims{sys, mesh} {
		s, err := ac.Encode(a.operator)
		if err != nil {
			return nil, nil, fmt.Errorf("bus: sign account %s: %w", ac.Name, err)
		}
		accounts[ac.Subject] = s
	}
	return op, accounts, nil
}

// Issuer mints users of the mesh account: the controller's, and one per
// node. Its key is the account's own, or a signing key of it (an operator of
// an external NATS gives the controller one).
type Issuer struct {
	key     nkeys.KeyPair
	account string // the account's public key when key is a signing key
}

// NewIssuer makes an issuer from an account seed (SA...). account is the
// account's public key when seed is one of its signing keys, "" when seed is
// the account's own.
func NewIssuer(seed []byte, account string) (*Issuer, error) {
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return nil, fmt.Errorf("bus: issuer: %w", err)
	}
	if nkeys.Prefix(mustPub(kp)) != nkeys.PrefixByteAccount {
		return nil, errors.New("bus: issuer: not an account seed (SA...)")
	}
	if account != "" && !nkeys.IsValidPublicAccountKey(account) {
		return nil, fmt.Errorf("bus: issuer: %q is not an account public key", account)
	}
	return &Issuer{key: kp, account: account}, nil
}

// User is a bus user's credentials: its JWT and its nkey seed.
type User struct {
	JWT  string `json:"jwt"`
	Seed string `json:"seed"`
}

// Controller mints the controller's user: every right in the mesh account.
func (i *Issuer) Controller() (User, error) { return i.user("controller", nil) }

// Node mints node's user, with NodePermissions(node) and nothing more.
func (i *Issuer) Node(node string) (User, error) {
	if err := ValidNode(node); err != nil {
		return User{}, err
	}
	p := NodePermissions(node)
	return i.user("node:"+node, &p)
}

func (i *Issuer) user(name string, perms *jwt.Permissions) (User, error) {
	return i.userUntil(name, perms, time.Time{})
}

// userUntil is user, expiring at until (zero: never).
func (i *Issuer) userUntil(name string, perms *jwt.Permissions, until time.Time) (User, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return User{}, fmt.Errorf("bus: user %s: %w", name, err)
	}
	uc := jwt.NewUserClaims(mustPub(kp))
	uc.Name = name
	uc.IssuerAccount = i.account
	if perms != nil {
		uc.Permissions = *perms
	}
	if !until.IsZero() {
		uc.Expires = until.Unix()
	}
	tok, err := uc.Encode(i.key)
	if err != nil {
		return User{}, fmt.Errorf("bus: sign user %s: %w", name, err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return User{}, fmt.Errorf("bus: user %s: %w", name, err)
	}
	return User{JWT: tok, Seed: string(seed)}, nil
}

func mustPub(kp nkeys.KeyPair) string {
	pub, err := kp.PublicKey()
	if err != nil {
		panic("bus: public key of a key pair made here: " + err.Error())
	}
	return pub
}

// ParseNATSCreds reads a user from the NATS .creds format (what nsc writes):
// how an operator of an external NATS hands the controller its user.
func ParseNATSCreds(b []byte) (User, error) {
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return User{}, fmt.Errorf("bus: nats creds: %w", err)
	}
	kp, err := jwt.ParseDecoratedUserNKey(b)
	if err != nil {
		return User{}, fmt.Errorf("bus: nats creds: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return User{}, fmt.Errorf("bus: nats creds: %w", err)
	}
	if _, err := jwt.DecodeUserClaims(tok); err != nil {
		return User{}, fmt.Errorf("bus: nats creds: %w", err)
	}
	return User{JWT: tok, Seed: string(seed)}, nil
}
