package bus

import (
	"errors"
	"fmt"

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
