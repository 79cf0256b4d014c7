package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// IssuerFor makes the issuer of node users on an external NATS cluster
// from a signing key seed of the mesh account (SA..., `mesh up
// --nats-account-seed`) and the controller's user, whose JWT names the
// account (the controller's user is the account's too): the seed may be
// the account's own key or one of its signing keys. A seed that signs
// for another account than the controller's is refused: the node users
// it minted would be strangers to the controller's account.
func IssuerFor(seed []byte, controller User) (*Issuer, error) {
	uc, err := jwt.DecodeUserClaims(controller.JWT)
	if err != nil {
		return nil, fmt.Errorf("bus: issuer: the controller's user: %w", err)
	}
	account := uc.IssuerAccount
	if account == "" {
		account = uc.Issuer // signed by the account's own key
	}
	if !nkeys.IsValidPublicAccountKey(account) {
		return nil, errors.New("bus: issuer: the controller's user names no account")
	}
	is, err := NewIssuer(seed, "")
	if err != nil {
		return nil, err
	}
	if pub := mustPub(is.key); pub != account {
		is.account = account // a signing key of the account
	}
	return is, nil
}

// ErrNoRevoker means the controller cannot put a revocation on an
// external NATS cluster: it was given no operator signing key and system
// user (--nats-operator-seed, --nats-system-creds).
var ErrNoRevoker = errors.New("bus: no operator signing key and system user to push the account's revocations with (mesh up --nats-operator-seed, --nats-system-creds; mesh bus account writes both)")

// Subjects of a full resolver (nats-server's DirAccResolver), in the
// system account: an account's JWT is asked for, and a new one given.
const claimsLookupSubject = "$SYS.REQ.ACCOUNT.%s.CLAIMS.LOOKUP"

// ExternalRevoker puts the mesh account's revocation list on an external
// NATS cluster in operator JWT mode with a full resolver (what `mesh bus
// account` configures), as nsc does: it asks the cluster for the account's
// JWT ($SYS.REQ.ACCOUNT.<id>.CLAIMS.LOOKUP), adds the revocations, signs
// it anew with a signing key of the operator, and sends it on
// $SYS.REQ.ACCOUNT.<id>.CLAIMS.UPDATE as a user of the system account.
// Every server of the cluster takes it (the subject reaches each through
// its routes), stores it in its resolver's directory, closes the
// connections of the users it revokes and refuses them from then on.
type ExternalRevoker struct {
	urls     []string
	ca       []byte
	system   User
	operator nkeys.KeyPair
	account  string
	logger   *slog.Logger
}

// NewExternalRevoker makes the revoker of account (the mesh account's
// public key) on the cluster at urls (its CA's PEM, nil for a public one),
// from a system account user's .creds and an operator signing key's seed
// (SO...).
func NewExternalRevoker(urls []string, ca, systemCreds, operatorSeed []byte, account string, log *slog.Logger) (*ExternalRevoker, error) {
	u, err := ParseNATSCreds(systemCreds)
	if err != nil {
		return nil, fmt.Errorf("bus: revoker: the system user: %w", err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(operatorSeed))
	if err != nil {
		return nil, fmt.Errorf("bus: revoker: the operator signing key: %w", err)
	}
	if nkeys.Prefix(mustPub(kp)) != nkeys.PrefixByteOperator {
		return nil, errors.New("bus: revoker: the operator signing key is not an operator seed (SO...)")
	}
	if !nkeys.IsValidPublicAccountKey(account) {
		return nil, fmt.Errorf("bus: revoker: %q is not an account public key", account)
	}
	return &ExternalRevoker{urls: urls, ca: ca, system: u, operator: kp, account: account, logger: log}, nil
}

// AccountOf is the account a user's JWT names (the controller's user is
// the mesh account's).
func AccountOf(u User) (string, error) {
	uc, err := jwt.DecodeUserClaims(u.JWT)
	if err != nil {
		return "", fmt.Errorf("bus: user jwt: %w", err)
	}
	if uc.IssuerAccount != "" {
		return uc.IssuerAccount, nil
	}
	return uc.Issuer, nil
}

// revokeWait bounds how long Revoke waits for the servers' answers after
// the first.
const revokeWait = 2 * time.Second

// Revoke adds revoked (public key → when: a user JWT issued at or before
// it is refused) to the mesh account's revocation list on the cluster,
// keeping what the list held (an operator's own revocations). It waits
// for an answer from each server of its URLs (at most revokeWait after
// the first), and fails if none took it or one refused it.
func (r *ExternalRevoker) Revoke(ctx context.Context, revoked map[string]time.Time) error {
	nc, err := dial(dialConfig{name: "meshplane-revoke", inbox: "_INBOX", urls: r.urls, user: r.system, ca: r.ca, logger: r.logger})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRevoke, err)
	}
	defer nc.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, fmt.Sprintf(claimsLookupSubject, r.account), nil)
	if err != nil {
		return fmt.Errorf("%w: look the account %s up: %w", ErrRevoke, r.account, err)
	}
	if len(msg.Data) == 0 {
		return fmt.Errorf("%w: the cluster has no JWT of the account %s (is the configuration of mesh bus account on its servers?)", ErrRevoke, r.account)
	}
	ac, err := jwt.DecodeAccountClaims(string(msg.Data))
	if err != nil {
		return fmt.Errorf("%w: the account's JWT: %w", ErrRevoke, err)
	}
	if ac.Subject != r.account {
		return fmt.Errorf("%w: the cluster answered with the JWT of %s, not %s", ErrRevoke, ac.Subject, r.account)
	}
	for pub, at := range revoked {
		if was, ok := ac.Revocations[pub]; ok && was >= at.Unix() {
			continue
		}
		ac.RevokeAt(pub, at)
	}
	tok, err := ac.Encode(r.operator)
	if err != nil {
		return fmt.Errorf("%w: sign the account: %w", ErrRevoke, err)
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRevoke, err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(fmt.Sprintf(claimsUpdateSubject, r.account), inbox, []byte(tok)); err != nil {
		return fmt.Errorf("%w: send the account: %w", ErrRevoke, err)
	}
	var took int
	for took < max(1, len(r.urls)) {
		wctx := rctx
		if took > 0 {
			var c context.CancelFunc
			wctx, c = context.WithTimeout(rctx, revokeWait)
			defer c()
		}
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			if took > 0 {
				break // the others answer late, or are down: one took it
			}
			return fmt.Errorf("%w: no server answered the account's update: %w", ErrRevoke, err)
		}
		var res struct {
			Data *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"data"`
			Error *struct {
				Code        int    `json:"code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &res); err != nil {
			return fmt.Errorf("%w: a server's answer %.200q: %w", ErrRevoke, m.Data, err)
		}
		if res.Error != nil || res.Data == nil {
			return fmt.Errorf("%w: a server refused the account's update: %.300s", ErrRevoke, m.Data)
		}
		took++
	}
	return nil
}
