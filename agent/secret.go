package agent

import (
	"context"
	"fmt"
	"slices"

	"meshplane/declaration"
)

// Secrets: a container whose spec reads secrets (declaration.Secret: a
// variable, the secret's name and its digest) is created with their values,
// which the agent asks the mesh for when, and only when, it creates such a
// container (SecretSource: on the bus, its own node-scoped subject). The
// values are held in memory for that apply only and handed to the runtime
// (Container.SecretEnv); they are never in the outbox, the State, a report
// or a file of the agent's, and a refusal's error names secrets, never a
// value. A container whose secrets cannot be had fails, and the next apply
// asks again.

// SecretSource gives the values of secrets, each at the digest the
// declaration names: the bus, as the node.
type SecretSource interface {
	Secrets(ctx context.Context, want []declaration.Secret) (map[string]string, error)
}

// needsSecrets says step s creates a container that reads secrets.
func needsSecrets(s Step) bool {
	return (s.Action == Create || s.Action == Replace) && s.Resource.Kind == declaration.KindContainer &&
		s.Resource.Container != nil && len(s.Resource.Container.Secrets) > 0
}

// hasSecrets says values holds every secret step s's container reads.
func hasSecrets(s Step, values map[string]string) bool {
	for _, x := range s.Resource.Container.Secrets {
		if _, ok := values[x.Secret]; !ok {
			return false
		}
	}
	return true
}

// secretsFor asks the agent's SecretSource, once, for the secrets of every
// container plan creates; it returns the values, and the steps that cannot
// be carried out for want of them, with why.
func (a *Agent) secretsFor(ctx context.Context, plan Plan) (map[string]string, map[string]error) {
	var want []declaration.Secret
	var steps []string
	for _, s := range plan.Steps {
		if !needsSecrets(s) {
			continue
		}
		steps = append(steps, s.Name)
		for _, x := range s.Resource.Container.Secrets {
			if !slices.ContainsFunc(want, func(w declaration.Secret) bool { return w.Secret == x.Secret }) {
				want = append(want, declaration.Secret{Secret: x.Secret, Digest: x.Digest})
			}
		}
	}
	if len(steps) == 0 {
		return nil, nil
	}
	var err error
	var values map[string]string
	if a.cfg.Secrets == nil {
		err = fmt.Errorf("this agent has no secret source: %w", ErrInvalid)
	} else if values, err = a.cfg.Secrets.Secrets(ctx, want); err == nil {
		return values, nil
	}
	failed := make(map[string]error, len(steps))
	for _, name := range steps {
		failed[name] = fmt.Errorf("create %s: its secrets: %w", name, err)
	}
	return nil, failed
}

// secretEnv is c's secret variables as "KEY=value", from values.
func secretEnv(c *declaration.Container, values map[string]string) []string {
	if len(c.Secrets) == 0 {
		return nil
	}
	out := make([]string, 0, len(c.Secrets))
	for _, x := range c.Secrets {
		out = append(out, x.Env+"="+values[x.Secret])
	}
	return out
}
