package commands

import (
	"context"
	"fmt"
	"strings"

	"meshplane/events"
)

// Secrets (secret.set, on stream "secret-<name>"): one stream per secret,
// each set of it in order. The value is sealed and digested by the shell
// (package secrets; Decide is pure): the command carries only the keyed
// digest, the sealed value and the key's id.

// SetSecret records a secret's value (its first or a later one: a rotation).
// Done when the secret's last value has the same digest already.
type SetSecret struct {
	Name   string
	Digest string // "hmac-sha256:<hex>"
	Sealed string // the value, encrypted with the secret store's key
	KeyID  string
	By     string
}

func (c SetSecret) Stream() string { return events.SecretStream(c.Name) }
func (SetSecret) command()         {}

// SecretDigestPrefix starts every secret's digest.
const SecretDigestPrefix = "hmac-sha256:"

// Secret is the state of a secret's stream: its last value, sealed.
type Secret struct {
	Name    string
	Version uint64
	Set     bool
	Digest  string
	Sealed  string
	KeyID   string
}

// EvolveSecret folds one event of a secret stream.
func EvolveSecret(s Secret, ev events.Event, p events.Payload) Secret {
	s.Version = ev.Version
	if p, ok := p.(events.SecretSet); ok {
		s.Name, s.Set, s.Digest, s.Sealed, s.KeyID = p.Name, true, p.Digest, p.Sealed, p.KeyID
	}
	return s
}

func secretDecodes(typ string) bool { return typ == events.TypeSecretSet }

func decideSecret(s Secret, c SetSecret) ([]events.Payload, error) {
	if !strings.HasPrefix(c.Digest, SecretDigestPrefix) || len(c.Digest) != len(SecretDigestPrefix)+64 {
		return nil, reject(CodeInvalid, "secret %s: a digest is %s and 64 hex digits", c.Name, SecretDigestPrefix)
	}
	if c.Sealed == "" || c.KeyID == "" {
		return nil, reject(CodeInvalid, "secret %s: no sealed value or key id", c.Name)
	}
	if s.Set && s.Digest == c.Digest {
		return nil, nil
	}
	return one(events.SecretSet{Name: c.Name, Digest: c.Digest, Sealed: c.Sealed, KeyID: c.KeyID, By: c.By})
}

// Secret returns a secret stream's state, read from the store.
func (h *Handler) Secret(ctx context.Context, name string) (Secret, error) {
	s, err := catchUp(ctx, h, events.SecretStream(name), Secret{}, 0, secretDecodes, EvolveSecret)
	if err != nil {
		return Secret{}, err
	}
	if s.Name == "" {
		s.Name = name
	}
	return s, nil
}

func (o *overlay) Secret(ctx context.Context, name string) (Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	return o.base.Secret(ctx, name)
}

// WithSecretDigests returns spec with every secret variable's digest set to
// its secret's current one, by digests (secret name → digest); a secret
// digests lacks keeps no digest (compose refuses it). spec is not changed.
func WithSecretDigests(spec events.ModuleSpec, digests map[string]string) events.ModuleSpec {
	cs := make([]events.ContainerSpec, len(spec.Containers))
	copy(cs, spec.Containers)
	for i, c := range cs {
		if len(c.Secrets) == 0 {
			continue
		}
		refs := make(map[string]events.SecretRef, len(c.Secrets))
		for k, ref := range c.Secrets {
			refs[k] = events.SecretRef{Secret: ref.Secret, Digest: digests[ref.Secret]}
		}
		cs[i].Secrets = refs
	}
	spec.Containers = cs
	return spec
}

// SecretsOf lists the secrets spec's containers read, once each.
func SecretsOf(spec events.ModuleSpec) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range spec.Containers {
		for _, ref := range c.Secrets {
			if !seen[ref.Secret] {
				seen[ref.Secret] = true
				out = append(out, ref.Secret)
			}
		}
	}
	return out
}

// CodeSecretUnknown refuses a module definition reading a secret that was
// never set.
const CodeSecretUnknown = "secret-unknown"

// withSecrets is spec with the current digest of every secret it reads
// (digests); a secret never set refuses the definition.
func withSecrets(module string, spec events.ModuleSpec, digests map[string]string) (events.ModuleSpec, error) {
	names := SecretsOf(spec)
	if len(names) == 0 {
		return spec, nil
	}
	for _, n := range names {
		if digests[n] == "" {
			return spec, reject(CodeSecretUnknown, "module %s reads secret %s, which is not set: mesh secret set %s", module, n, n)
		}
	}
	return WithSecretDigests(spec, digests), nil
}

// secretDigests reads the current digest of every secret spec reads.
func secretDigests(ctx context.Context, src source, spec events.ModuleSpec) (map[string]string, error) {
	names := SecretsOf(spec)
	if len(names) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		s, err := src.Secret(ctx, n)
		if err != nil {
			return nil, err
		}
		if s.Set {
			out[n] = s.Digest
		}
	}
	return out, nil
}

// checkSecretSet is the import door's check of a secret.set: on its
// secret's stream, what SetSecret would accept.
func checkSecretSet(ev events.Event, p events.SecretSet) error {
	if bad := badName("secret", p.Name); bad != "" {
		return fmt.Errorf("%s: secret name %s", ev.Type, bad)
	}
	if want := events.SecretStream(p.Name); ev.Stream != want {
		return fmt.Errorf("%s of secret %s on stream %s: a secret's events are on its own stream, %s", ev.Type, p.Name, short(ev.Stream), want)
	}
	if _, err := decideSecret(Secret{}, SetSecret{Name: p.Name, Digest: p.Digest, Sealed: p.Sealed, KeyID: p.KeyID}); err != nil {
		return fmt.Errorf("%s: %w", ev.Type, err)
	}
	return nil
}

func describeSecret(c SetSecret) string { return fmt.Sprintf("SetSecret %s", c.Name) }
