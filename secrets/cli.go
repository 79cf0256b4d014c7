package secrets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"meshplane/api"
)

// Help is `mesh secret`'s help.
const Help = `Secrets are the values a module's containers read from their environment
without any event, export, backup, API answer, page or plan holding them:
a module file names one by {secret: NAME}, never by its value:

  containers:
    - name: web
      image: forge:1
      env: {LOG: info, DB_PASSWORD: {secret: forge-db}}

mesh secret set NAME reads the value from stdin (never the command line) and
records it sealed (AES-256-GCM) under the controller's secret key, kept
outside the store (DATA/secret.key, 0600, made at the first set or start;
or the file $MESH_SECRET_KEY names: give every controller of a cluster the
same one). Events keep the secret's name and a keyed digest of its value
(HMAC-SHA256 under that key, so a weak password cannot be tried against
it): module.defined and declaration.composed carry {secret, digest}.
Defining a module that reads a secret not set is refused (exit 3).

Setting a secret again (a rotation) is a secret.set and a module.defined of
every module reading it, with the new digest: the next push replaces their
containers, and mesh plan shows which, mesh why the digest that changed.
An agent asks the leading controller for a value over its own bus
connection when it creates the container, and only for the secrets its
declaration names; it holds the value in memory and hands it to the
runtime, never to its files or its reports.

mesh secret list shows every secret set: its name, the digest of its value,
when and by whom it was last set, how many times, and the modules reading
it. Never a value.

Locally on the data directory, or against a controller (--server).`

// SetHelp is `mesh secret set`'s help.
const SetHelp = `Set the secret NAME (a DNS label) to the value read from stdin: one
trailing newline is dropped; at most 64 KiB, UTF-8. The same value again
appends nothing. Every module reading the secret is defined again with its
new digest, under the same request.

  printf %s "$DB_PASSWORD" | mesh secret set forge-db
  mesh secret set forge-db < password.txt --server https://ctl:7480`

// ErrNoSecrets refuses the secret verbs on a service without a secret store.
var ErrNoSecrets = errors.New("this service keeps no secrets")

// ReadValue reads a secret's value from r: at most MaxValue bytes, one
// trailing newline ("\n" or "\r\n") dropped.
func ReadValue(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxValue+2))
	if err != nil {
		return "", fmt.Errorf("secrets: read the value from stdin: %w", err)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if len(v) > MaxValue {
		return "", fmt.Errorf("secrets: the value on stdin is over %d bytes", MaxValue)
	}
	return v, nil
}

// Set is `mesh secret set NAME`: the value read from stdin, set by
// operator through svc.
func Set(ctx context.Context, svc api.Service, operator, name string, stdin io.Reader) (api.CommandResult, error) {
	s, ok := svc.(api.Secrets)
	if !ok {
		return api.CommandResult{}, ErrNoSecrets
	}
	v, err := ReadValue(stdin)
	if err != nil {
		return api.CommandResult{}, err
	}
	return s.SetSecret(ctx, api.SetSecretRequest{Operator: operator, Name: name, Value: v})
}

// ListOf is `mesh secret list` (its arguments, none, passed over).
func ListOf(ctx context.Context, svc api.Service, _ []string) (api.SecretList, error) {
	s, ok := svc.(api.Secrets)
	if !ok {
		return api.SecretList{}, ErrNoSecrets
	}
	return s.SecretList(ctx)
}
