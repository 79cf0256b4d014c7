package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
)

// TestSecrets: on the real server, a node gets the value of a secret its
// declaration names, at its digest; a secret not in its declaration, one at
// another digest, and a request on another node's subject are refused (the
// last by the server, a permissions violation), and a standby answers
// nothing.
func TestSecrets(t *testing.T) {
	ctx := context.Background()
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	decl := func(node, secret, digest string) declaration.Declaration {
		return declaration.Declaration{Node: node, ID: node + "/1", Resources: []declaration.Resource{{
			Name: "web", Kind: declaration.KindContainer, Module: "forge",
			Container: &declaration.Container{Image: "forge:1", Secrets: []declaration.Secret{{Env: "DB", Secret: secret, Digest: digest}}},
		}}}
	}
	for _, d := range []declaration.Declaration{decl("a", "forge-db", "hmac-sha256:1"), decl("b", "other-db", "hmac-sha256:2")} {
		if _, err := ctl.PutDeclaration(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	var leading atomic.Bool
	leading.Store(true)
	svc, err := ctl.ServeSecrets(func(_ context.Context, want []declaration.Secret) (map[string]string, error) {
		if !leading.Load() {
			return nil, bus.ErrNotLeading
		}
		out := map[string]string{}
		for _, w := range want {
			out[w.Secret] = "value-of-" + w.Secret
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()

	n := natstest.Node(t, s, "a")
	cases := []struct {
		name string
		want []declaration.Secret
		err  error
	}{
		{"its own", []declaration.Secret{{Secret: "forge-db", Digest: "hmac-sha256:1"}}, nil},
		{"another node's", []declaration.Secret{{Secret: "other-db", Digest: "hmac-sha256:2"}}, bus.ErrSecretRefused},
		{"another digest", []declaration.Secret{{Secret: "forge-db", Digest: "hmac-sha256:9"}}, bus.ErrSecretRefused},
		{"none", nil, bus.ErrSecretRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			got, err := n.Secrets(ctx, c.want)
			if !errors.Is(err, c.err) {
				t.Fatalf("Secrets = %v, %v; want %v", got, err, c.err)
			}
			if c.err == nil && got["forge-db"] != "value-of-forge-db" {
				t.Fatalf("Secrets = %v", got)
			}
		})
	}
	if st := svc.Stats(); st.Answered != 1 || st.Refused != 3 {
		t.Errorf("stats %+v, want 1 answered, 3 refused", st)
	}

	nc, errs := rawNode(t, s, "a")
	if err := nc.Publish(bus.SecretSubject("b"), []byte(`{"node":"b","secrets":[{"secret":"other-db","digest":"hmac-sha256:2"}]}`)); err != nil {
		t.Fatal(err)
	}
	violation(t, errs, bus.SecretSubject("b"))

	leading.Store(false)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if got, err := n.Secrets(short, cases[0].want); err == nil {
		t.Fatalf("a standby answered %v", got)
	}
}
