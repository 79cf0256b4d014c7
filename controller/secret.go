package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/secrets"
)

// Secrets (mesh secret): the controller seals each value with its secret
// key (Config.SecretKey; package secrets says why the value is sealed in
// the store and the key kept outside it), records the keyed digest and the
// sealed value (secret.set), and defines again every module reading the
// secret with the new digest, all in one request: a rotation is a change
// like any other, which the next push carries and plan shows. The leading
// controller opens a value only for an agent's request the bus checked
// against the node's declaration (ResolveSecrets).

// ErrNotLeading refuses a secret request to a standby controller: the
// leader answers it.
var ErrNotLeading = errors.New("controller: a standby gives no secret")

var _ api.Secrets = (*Controller)(nil)

// errNoSecretKey refuses what needs the key on a controller without one.
func errNoSecretKey() error {
	return reject(commands.CodeInvalid, "this controller has no secret key (%s in its data directory, or $%s)", secrets.KeyFile, secrets.KeyEnv)
}

// SetSecret sets the secret req.Name to req.Value, by req.Operator, and
// redefines every module reading it with its new digest.
func (c *Controller) SetSecret(ctx context.Context, req api.SetSecretRequest) (api.CommandResult, error) {
	if err := req.Validate(); err != nil {
		return api.CommandResult{}, err
	}
	if c.secretKey == nil {
		return api.CommandResult{}, errNoSecretKey()
	}
	who, err := actor(req.Operator)
	if err != nil {
		return api.CommandResult{}, err
	}
	value := []byte(req.Value)
	sealed, err := c.secretKey.Seal(req.Name, value)
	if err != nil {
		return api.CommandResult{}, err
	}
	cs := []commands.Command{commands.SetSecret{
		Name: req.Name, Digest: c.secretKey.Digest(req.Name, value), Sealed: sealed, KeyID: c.secretKey.ID(), By: who,
	}}
	readers, err := c.secretReaders(ctx, req.Name)
	if err != nil {
		return api.CommandResult{}, err
	}
	for _, m := range readers {
		cs = append(cs, commands.DefineModule{Module: m.Name, Spec: m.Spec})
	}
	return c.execute(ctx, req.Operator, cs...)
}

// plannedRotation is what mesh plan --after "secret set NAME" runs: a
// rotation of secret name to a value not known (mesh plan never takes one),
// so a digest made for the plan, unlike the current one, and every module
// reading the secret now redefined with it, as SetSecret does. A secret
// never set is refused (secret-unknown): no module can read it.
func (c *Controller) plannedRotation(ctx context.Context, name string) ([]commands.Command, error) {
	s, err := c.handler.Secret(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("controller: plan secret set %s: %w", name, err)
	}
	if !s.Set {
		return nil, &commands.Rejection{Code: commands.CodeSecretUnknown, Msg: fmt.Sprintf("secret %s was never set (mesh secret set %s)", name, name)}
	}
	sum := sha256.Sum256([]byte("mesh plan: a rotation of " + name + " from " + s.Digest))
	cs := []commands.Command{commands.SetSecret{
		Name: name, Digest: commands.SecretDigestPrefix + hex.EncodeToString(sum[:]), Sealed: "(planned)", KeyID: "(planned)", By: "plan",
	}}
	readers, err := c.secretReaders(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, m := range readers {
		cs = append(cs, commands.DefineModule{Module: m.Name, Spec: m.Spec})
	}
	return cs, nil
}

// secretReaders are the defined modules whose containers read secret name.
func (c *Controller) secretReaders(ctx context.Context, name string) ([]commands.Module, error) {
	names, err := c.handler.Modules(ctx)
	if err != nil {
		return nil, fmt.Errorf("controller: modules reading secret %s: %w", name, err)
	}
	var out []commands.Module
	for _, n := range names {
		m, err := c.handler.Module(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("controller: modules reading secret %s: %w", name, err)
		}
		if m.Defined && slices.Contains(commands.SecretsOf(m.Spec), name) {
			out = append(out, m)
		}
	}
	return out, nil
}

// SecretList lists every secret history holds, by name: its last digest,
// when and by whom it was set, and the modules reading it. It reads the
// store's secret.set events (a secret is set rarely; the list is rare too).
func (c *Controller) SecretList(ctx context.Context) (api.SecretList, error) {
	byName := map[string]*api.SecretInfo{}
	var after uint64
	for {
		evs, err := c.store.ReadAll(ctx, after, 4096)
		if err != nil {
			return api.SecretList{}, fmt.Errorf("controller: secrets: %w", err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			after = ev.Position
			if ev.Type != events.TypeSecretSet {
				continue
			}
			p, err := c.reg.Decode(ev)
			s, ok := p.(events.SecretSet)
			if err != nil || !ok {
				continue
			}
			x := byName[s.Name]
			if x == nil {
				x = &api.SecretInfo{Name: s.Name}
				byName[s.Name] = x
			}
			x.Digest, x.Set, x.By, x.Version = s.Digest, ev.At, s.By, x.Version+1
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	out := api.SecretList{Secrets: []api.SecretInfo{}}
	for _, n := range names {
		x := byName[n]
		readers, err := c.secretReaders(ctx, n)
		if err != nil {
			return api.SecretList{}, err
		}
		for _, m := range readers {
			x.Modules = append(x.Modules, m.Name)
		}
		out.Secrets = append(out.Secrets, *x)
	}
	return out, nil
}

// ResolveSecrets opens the values of want, each at the digest it names, for
// an agent's request the bus checked against the node's declaration. A
// standby answers nothing (ErrNotLeading); a secret whose last value has
// another digest (rotated since that declaration), or that does not open
// under this controller's key, is refused.
func (c *Controller) ResolveSecrets(ctx context.Context, want []declaration.Secret) (map[string]string, error) {
	if c.standby.Load() {
		return nil, ErrNotLeading
	}
	if c.secretKey == nil {
		return nil, errNoSecretKey()
	}
	out := make(map[string]string, len(want))
	for _, w := range want {
		s, err := c.handler.Secret(ctx, w.Secret)
		if err != nil {
			return nil, fmt.Errorf("controller: secret %s: %w", w.Secret, err)
		}
		if !s.Set {
			return nil, fmt.Errorf("controller: secret %s is not set", w.Secret)
		}
		if s.Digest != w.Digest {
			return nil, fmt.Errorf("controller: secret %s was set again: its digest is %s, not %s (the next declaration carries it)", w.Secret, s.Digest, w.Digest)
		}
		v, err := c.secretKey.Open(w.Secret, s.KeyID, s.Sealed)
		if err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
		out[w.Secret] = string(v)
	}
	return out, nil
}
