package controller_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/secrets"
)

// TestSecretsSetListResolve: a set seals the value under the key and
// records its digest, never the value; a rotation redefines the module
// that reads it; the list names secrets and modules; a value is given only
// at its current digest, by a leading controller with the key.
func TestSecretsSetListResolve(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	key, _ := secrets.NewKey(bytes.Repeat([]byte{1}, secrets.KeySize))
	ctl, err := controller.New(controller.Config{Store: store, SecretKey: key})
	if err != nil {
		t.Fatal(err)
	}
	set := func(v string) {
		t.Helper()
		if _, err := ctl.SetSecret(ctx, api.SetSecretRequest{Operator: "ana", Name: "forge-db", Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	set("first-Value")
	spec := events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1", Secrets: map[string]events.SecretRef{"DB": {Secret: "forge-db"}}}}}
	if _, err := ctl.DefineModules(ctx, api.DefineModulesRequest{Operator: "ana", Modules: []api.ModuleDefinition{{Module: "forge", Spec: spec}}}); err != nil {
		t.Fatal(err)
	}
	first := key.Digest("forge-db", []byte("first-Value"))
	got, err := ctl.ResolveSecrets(ctx, []declaration.Secret{{Secret: "forge-db", Digest: first}})
	if err != nil || got["forge-db"] != "first-Value" {
		t.Fatalf("ResolveSecrets = %v, %v", got, err)
	}
	set("second-Value")
	if _, err := ctl.ResolveSecrets(ctx, []declaration.Secret{{Secret: "forge-db", Digest: first}}); err == nil {
		t.Fatal("a value was given at a digest it no longer has")
	}
	m, err := ctl.ModuleShow(ctx, "forge")
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Spec.Containers[0].Secrets["DB"].Digest; d != key.Digest("forge-db", []byte("second-Value")) {
		t.Fatalf("forge after the rotation reads digest %s", d)
	}
	list, err := ctl.SecretList(ctx)
	if err != nil || len(list.Secrets) != 1 || list.Secrets[0].Version != 2 || list.Secrets[0].By != "operator:ana" || strings.Join(list.Secrets[0].Modules, ",") != "forge" {
		t.Fatalf("SecretList = %+v, %v", list, err)
	}
	all, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range all {
		if bytes.Contains(ev.Data, []byte("first-Value")) || bytes.Contains(ev.Data, []byte("second-Value")) {
			t.Fatalf("%s holds a secret's value", ev.Type)
		}
	}

	for _, tc := range []struct {
		name string
		cfg  controller.Config
		want error
	}{
		{"a standby", controller.Config{Store: store, SecretKey: key, Standby: true}, controller.ErrNotLeading},
		{"no key", controller.Config{Store: store}, commands.ErrRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := controller.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ResolveSecrets(ctx, []declaration.Secret{{Secret: "forge-db", Digest: first}}); !errors.Is(err, tc.want) {
				t.Fatalf("ResolveSecrets = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := ctl.SetSecret(ctx, api.SetSecretRequest{Operator: "ana", Name: "forge-db"}); err == nil {
		t.Error("an empty value was set")
	}
}
