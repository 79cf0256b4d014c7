package bus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"meshplane/internal/atomicfile"
)

// An external NATS cluster dedicated to meshplane (`mesh up --nats`): the
// operator of the cluster runs the servers (their cluster, JetStream, TLS
// blocks are theirs), and meshplane gives them the trust, in operator JWT
// mode, as NATS's own tools would (nsc): an operator, a system account and
// the mesh account, whose JWTs every server preloads in its account
// resolver. The mesh account has a signing key, which the controller
// keeps (--nats-account-seed) and mints node users with (the account's
// own key stays with the operator, offline); the controller's own user is
// signed by it too (--nats-creds). The resolver is "full" (each server
// keeps the account JWTs in a directory of its own), so that an account
// JWT re-signed later (a revocation, a new signing key) can be pushed to
// every server through the system account rather than by editing each
// configuration: to revoke a node's user the controller re-signs the mesh
// account's JWT with its revocation list, with a signing key of the
// operator (--nats-operator-seed), and sends it as a user of the system
// account (--nats-system-creds) on $SYS.REQ.ACCOUNT.<id>.CLAIMS.UPDATE,
// as nsc push does (ExternalRevoker).
//
// ExternalAccount's files, in its directory (DATA/bus-account by `mesh bus
// account`), each written once, mode 0600:
//
//	operator.nk        the operator's seed (SO...): keep it offline
//	system-account.nk  the system account's seed
//	mesh-account.nk    the mesh account's own seed (SA...): keep it offline
//	signing.nk         a signing key of the mesh account: --nats-account-seed
//	operator-signing.nk  a signing key of the operator: --nats-operator-seed
//	controller.creds   the controller's user (NATS .creds): --nats-creds
//	system.creds       a user of the system account: --nats-system-creds
//	nats-server.conf   the servers' configuration fragment (ServerConfig)
//
// An operator signing key signs any account of the operator: the
// controller that holds it could re-sign the system account too. It is
// the least NATS offers for pushing an account's revocations (an account
// JWT is signed by its operator); an operator who will not hand it over
// leaves --nats-operator-seed out, and `mesh node revoke` then records the
// revocation and says the cluster did not take it.
const (
	signingSeedFile     = "signing.nk"
	OperatorSigningFile = "operator-signing.nk"
	ControllerCredsFile = "controller.creds"
	SystemCredsFile     = "system.creds"
	ServerConfFile      = "nats-server.conf"
)

// ExternalAccount is the trust of an external NATS cluster dedicated to
// meshplane.
type ExternalAccount struct {
	Dir                                           string
	operator, system, account, signing, opSigning nkeys.KeyPair
}

// LoadExternalAccount reads the trust from dir, making what is missing
// (the seeds, then the controller's creds and the configuration
// fragment), once.
func LoadExternalAccount(dir string) (*ExternalAccount, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bus: account: %w", err)
	}
	a := &ExternalAccount{Dir: dir}
	var err error
	for _, k := range []struct {
		kp     *nkeys.KeyPair
		file   string
		prefix nkeys.PrefixByte
	}{
		{&a.operator, operatorSeedFile, nkeys.PrefixByteOperator},
		{&a.system, systemSeedFile, nkeys.PrefixByteAccount},
		{&a.account, accountSeedFile, nkeys.PrefixByteAccount},
		{&a.signing, signingSeedFile, nkeys.PrefixByteAccount},
		{&a.opSigning, OperatorSigningFile, nkeys.PrefixByteOperator},
	} {
		if *k.kp, err = loadOrMakeSeed(filepath.Join(dir, k.file), k.prefix); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		user func() (User, error)
	}{
		{ControllerCredsFile, a.Issuer().Controller},
		{SystemCredsFile, a.systemUser},
	} {
		path := filepath.Join(dir, f.name)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			u, err := f.user()
			if err != nil {
				return nil, err
			}
			b, err := jwt.FormatUserConfig(u.JWT, []byte(u.Seed))
			if err != nil {
				return nil, fmt.Errorf("bus: account: %s: %w", f.name, err)
			}
			if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
				return nil, fmt.Errorf("bus: account: %w", err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("bus: account: %w", err)
		}
	}
	conf, err := a.ServerConfig()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ServerConfFile), []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("bus: account: %w", err)
	}
	return a, nil
}

// Issuer is the mesh account's signing key as an issuer of users.
func (a *ExternalAccount) Issuer() *Issuer {
	return &Issuer{key: a.signing, account: mustPub(a.account)}
}

// systemUser is a user of the system account, signed by its key: the
// user the controller sends account JWTs as (--nats-system-creds).
func (a *ExternalAccount) systemUser() (User, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return User{}, fmt.Errorf("bus: account: system user: %w", err)
	}
	uc := jwt.NewUserClaims(mustPub(kp))
	uc.Name = "controller:system"
	tok, err := uc.Encode(a.system)
	if err != nil {
		return User{}, fmt.Errorf("bus: account: sign the system user: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return User{}, fmt.Errorf("bus: account: system user: %w", err)
	}
	return User{JWT: tok, Seed: string(seed)}, nil
}

// AccountPublicKey is the mesh account's public key (A...).
func (a *ExternalAccount) AccountPublicKey() string { return mustPub(a.account) }

// ResolverDir is the directory the fragment names for each server's
// account JWTs, relative to the server's working directory: give each
// server its own (an absolute path in its configuration is as good).
const ResolverDir = "meshplane-jwt"

// ServerConfig is the configuration fragment every server of the cluster
// takes, beside its own blocks (listen, cluster, jetstream, tls): the
// operator's JWT, the system account, a full resolver keeping the account
// JWTs in ResolverDir, and the two accounts' JWTs preloaded.
func (a *ExternalAccount) ServerConfig() (string, error) {
	sysPub, accPub := mustPub(a.system), mustPub(a.account)
	op := jwt.NewOperatorClaims(mustPub(a.operator))
	op.Name = "meshplane"
	op.SystemAccount = sysPub
	op.SigningKeys.Add(mustPub(a.opSigning))
	opJWT, err := op.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("bus: account: sign operator: %w", err)
	}
	sys := jwt.NewAccountClaims(sysPub)
	sys.Name = "SYS"
	mesh := jwt.NewAccountClaims(accPub)
	mesh.Name = "MESH"
	mesh.SigningKeys.Add(mustPub(a.signing))
	mesh.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: AccountMaxConsumers}
	jwts := map[string]string{}
	for _, ac := range []*jwt.AccountClaims{sys, mesh} {
		s, err := ac.Encode(a.operator)
		if err != nil {
			return "", fmt.Errorf("bus: account: sign account %s: %w", ac.Name, err)
		}
		jwts[ac.Subject] = s
	}
	keys := make([]string, 0, len(jwts))
	for k := range jwts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, `# meshplane: the trust of a NATS cluster dedicated to meshplane (operator JWT
# mode). Put it in every server's configuration, beside its own listen,
# cluster, jetstream and tls blocks; JetStream must be on. The resolver keeps
# the account JWTs in %q, relative to the server's working directory:
# each server needs its own.
operator: %s
system_account: %s
resolver: {
  type: full
  dir: %q
  allow_delete: false
}
resolver_preload: {
`, ResolverDir, opJWT, sysPub, ResolverDir)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", k, jwts[k])
	}
	b.WriteString("}\n# The declarations carry whole files: raise the payload limit.\nmax_payload: 8MB\n")
	return b.String(), nil
}
