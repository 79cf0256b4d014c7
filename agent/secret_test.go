package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

type secretSource struct {
	values map[string]string // "secret digest" → value
	err    error
	asked  int
}

func (s *secretSource) Secrets(_ context.Context, want []declaration.Secret) (map[string]string, error) {
	s.asked++
	if s.err != nil {
		return nil, s.err
	}
	out := map[string]string{}
	for _, w := range want {
		out[w.Secret] = s.values[w.Secret+" "+w.Digest]
	}
	return out, nil
}

func withSecret(digest string) declaration.Container {
	c := image("forge:1")
	c.Env = []string{"LOG=info"}
	c.Secrets = []declaration.Secret{{Env: "DB_PASSWORD", Secret: "forge-db", Digest: digest}}
	return c
}

// TestApplySecrets: a container reading a secret is created with its value
// beside its env (asked once, when created; a quiet pass asks nothing); a
// source that fails, or none, fails that container alone, and a replaced
// one is left running; the outbox's report never holds a value.
func TestApplySecrets(t *testing.T) {
	cases := []struct {
		name    string
		src     *secretSource // nil: the agent has none
		wantEnv []string      // web's env after the first apply; nil: web failed
	}{
		{"given", &secretSource{values: map[string]string{"forge-db d1": "pw-One"}}, []string{"LOG=info", "DB_PASSWORD=pw-One"}},
		{"refused", &secretSource{err: errors.New("bus: secret refused: not in the declaration")}, nil},
		{"no source", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rt := simruntime.New()
			box := agent.NewMemOutbox()
			cfg := agent.Config{
				Node: "novox", Runtime: rt, Outbox: box, Now: time.Now, NewID: uuid.NewV7,
				Deliver: func(context.Context, agent.Report) error { return errors.New("kept") },
			}
			if tc.src != nil {
				cfg.Secrets = tc.src
			}
			a, err := agent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			d := decl("novox/1", ctr("web", "forge", withSecret("d1")), ctr("proxy", "route-proxy", image("caddy:2")))
			rep, err := a.Apply(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantEnv == nil {
				if len(rep.Outcome.Failed) != 1 || rep.Outcome.Failed[0].Name != "web" || !slices.Contains(rep.Outcome.Created, "proxy") {
					t.Fatalf("report %+v: want web failed, proxy created", rep.Outcome)
				}
				return
			}
			if got := rt.Env("web"); !slices.Equal(got, tc.wantEnv) {
				t.Fatalf("web's env %q, want %q", got, tc.wantEnv)
			}
			if _, err := a.Apply(ctx, d); err != nil || tc.src.asked != 1 {
				t.Fatalf("a quiet pass asked again (%d asks), %v", tc.src.asked, err)
			}
			// Rotated, then the source fails: web stays as it ran.
			tc.src.err = errors.New("no leader")
			rep, err = a.Apply(ctx, decl("novox/2", ctr("web", "forge", withSecret("d2")), ctr("proxy", "route-proxy", image("caddy:2"))))
			if err != nil || len(rep.Outcome.Failed) != 1 || !slices.Equal(rt.Env("web"), tc.wantEnv) {
				t.Fatalf("a replace without its secret: %+v, %v; env %q", rep.Outcome, err, rt.Env("web"))
			}
			pending, err := box.Pending()
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(struct {
				P []agent.Report
				S agent.State
			}{pending, a.State()})
			if err != nil || len(pending) != 3 || strings.Contains(string(b), "pw-One") {
				t.Fatalf("the outbox's %d reports and state hold the value (or do not encode: %v)", len(pending), err)
			}
		})
	}
}
