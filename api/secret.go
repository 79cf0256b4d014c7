package api

import (
	"context"
	"time"
	"unicode/utf8"

	"meshplane/events"
)

// Secrets is the controller's secret store (mesh secret): kept out of
// Service, as Tokens is; both the CLI's local mode and a running
// controller have it. No answer of it, nor of any other call, ever holds a
// secret's value.
type Secrets interface {
	// SetSecret sets (or rotates) the secret Name to Value: a secret.set
	// with its keyed digest and its sealed value, and every module that
	// reads it defined again with the new digest.
	SetSecret(ctx context.Context, req SetSecretRequest) (CommandResult, error)
	// SecretList lists every secret set: names, digests, when and by whom.
	SecretList(ctx context.Context) (SecretList, error)
}

// MaxSecretValue bounds a secret's value (secrets.MaxValue).
const MaxSecretValue = 64 << 10

// SetSecretRequest sets the secret Name to Value. Value is sent once, to
// the controller, and never answered back.
type SetSecretRequest struct {
	Operator string `json:"operator"`
	Name     string `json:"name"`
	Value    string `json:"value"`
}

// Validate checks a SetSecretRequest: the operator, the secret's name (a
// DNS label), a value of 1 byte to MaxSecretValue.
func (r SetSecretRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	if err := events.CheckName("secret", r.Name); err != nil {
		return invalidField("name", "%v", err)
	}
	switch {
	case r.Value == "":
		return invalidField("value", "empty: a secret has a value")
	case len(r.Value) > MaxSecretValue:
		return invalidField("value", "%d bytes: at most %d", len(r.Value), MaxSecretValue)
	case !utf8.ValidString(r.Value):
		return invalidField("value", "not UTF-8: an environment variable's value is text")
	}
	return nil
}

// SecretList is every secret set, by name.
type SecretList struct {
	Secrets []SecretInfo `json:"secrets"`
}

// SecretInfo is one secret: never its value.
type SecretInfo struct {
	Name    string    `json:"name"`
	Digest  string    `json:"digest"`
	Set     time.Time `json:"set"`
	By      string    `json:"by"`
	Version uint64    `json:"version"`           // how many times it was set
	Modules []string  `json:"modules,omitempty"` // the modules that read it, sorted
}
