package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ErrRevoke means the revocation list could not be put on the bus.
var ErrRevoke = errors.New("bus: revoke")

// claimsUpdateSubject is where a server of the system account takes an
// account's new JWT (nats-server's $SYS.REQ.ACCOUNT.<id>.CLAIMS.UPDATE,
// which a server with a memory resolver subscribes to): every server of a
// cluster, through its routes.
const claimsUpdateSubject = "$SYS.REQ.ACCOUNT.%s.CLAIMS.UPDATE"

// Revoke makes revoked (public key → when: a user JWT issued at or before
// it is refused) the mesh account's revocation list, at once: the account
// JWT is signed anew by the operator, put in the resolver, applied to this
// server (the connections of revoked users are closed, and their
// reconnections refused) and published to the system account's claims
// update subject, so that every server routed to this one applies it too.
// revoked is the whole list (history's), not what is new.
func (s *Server) Revoke(ctx context.Context, revoked map[string]time.Time) error {
	_, accounts, err := s.auth.claims(revoked)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRevoke, err)
	}
	pub := s.auth.AccountPublicKey()
	tok := accounts[pub]
	ac, err := jwt.DecodeAccountClaims(tok)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRevoke, err)
	}
	if r := s.ns.AccountResolver(); r != nil {
		if err := r.Store(pub, tok); err != nil {
			return fmt.Errorf("%w: store the account: %w", ErrRevoke, err)
		}
	}
	acc, err := s.ns.LookupAccount(pub)
	if err != nil {
		return fmt.Errorf("%w: the mesh account: %w", ErrRevoke, err)
	}
	s.ns.UpdateAccountClaims(acc, ac) // closes the revoked users' connections
	return s.publishClaims(ctx, pub, tok)
}

// publishClaims publishes an account JWT on the claims update subject, as
// a user of the system account connected in process.
func (s *Server) publishClaims(ctx context.Context, account, tok string) error {
	u, err := s.auth.systemUser()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRevoke, err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(s.ns), nats.UserJWTAndSeed(u.JWT, u.Seed), nats.Name("meshplane-revoke"))
	if err != nil {
		return fmt.Errorf("%w: connect as the system account: %w", ErrRevoke, err)
	}
	defer nc.Close()
	if err := nc.Publish(fmt.Sprintf(claimsUpdateSubject, account), []byte(tok)); err != nil {
		return fmt.Errorf("%w: publish the account: %w", ErrRevoke, err)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := nc.FlushWithContext(fctx); err != nil {
		return fmt.Errorf("%w: publish the account: %w", ErrRevoke, err)
	}
	return nil
}

// systemUser mints a user of the system account.
func (a *Authority) systemUser() (User, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return User{}, fmt.Errorf("bus: system user: %w", err)
	}
	uc := jwt.NewUserClaims(mustPub(kp))
	uc.Name = "controller:system"
	tok, err := uc.Encode(a.system)
	if err != nil {
		return User{}, fmt.Errorf("bus: sign system user: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return User{}, fmt.Errorf("bus: system user: %w", err)
	}
	return User{JWT: tok, Seed: string(seed)}, nil
}
