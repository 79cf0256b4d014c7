package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/secrets"

	"github.com/google/uuid"
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

// TestPlanSecretRotation: mesh plan --after "secret set NAME" previews a
// rotation, with no value and nothing appended: every container reading
// the secret is replaced for its secret variable; a secret never set is
// refused (secret-unknown).
func TestPlanSecretRotation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, bus := memstore.New(), newBus()
	key, _ := secrets.NewKey(bytes.Repeat([]byte{1}, secrets.KeySize))
	ctl, err := controller.New(controller.Config{Store: store, Publisher: bus, SecretKey: key})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if _, err := ctl.SetSecret(ctx, api.SetSecretRequest{Operator: "ana", Name: "forge-db", Value: "first-Value"}); err != nil {
		t.Fatal(err)
	}
	spec := events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1", Secrets: map[string]events.SecretRef{"DB": {Secret: "forge-db"}}}}}
	if _, err := ctl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "ana", Nodes: []string{"novox"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.DefineModules(ctx, api.DefineModulesRequest{Operator: "ana", Modules: []api.ModuleDefinition{{Module: "forge", Spec: spec}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Assign(ctx, api.ModuleNodeRequest{Operator: "ana", Module: "forge", Node: "novox"}); err != nil {
		t.Fatal(err)
	}
	d := bus.latest("novox")
	rep := events.ApplyReported{Node: "novox", Declaration: d.ID, Digest: d.Digest, Sent: len(d.Resources), Applied: len(d.Resources), Created: []string{"web"}}
	if _, err := ctl.RecordReport(ctx, commands.Delivery{Report: rep, ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Now(), Correlation: d.Correlation}); err != nil {
		t.Fatal(err)
	}
	head, _ := store.Head(ctx)
	plan, err := ctl.Plan(ctx, api.PlanRequest{After: []string{"secret set forge-db"}})
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := store.Head(ctx); after != head {
		t.Errorf("the plan appended %d event(s)", after-head)
	}
	var replaced []string
	for _, n := range plan.Nodes {
		for _, st := range n.Steps {
			for _, c := range st.Changes {
				if st.Action == "replace" {
					replaced = append(replaced, st.Name+" "+c.Field)
				}
			}
		}
	}
	b, _ := json.Marshal(plan)
	if len(replaced) != 1 || replaced[0] != "web secret.DB" || strings.Contains(string(b), "first-Value") {
		t.Errorf("the plan of a rotation replaces %v (%s); want web for secret.DB, and no value", replaced, b)
	}
	var rej *commands.Rejection
	if _, err := ctl.Plan(ctx, api.PlanRequest{After: []string{"secret set nosuch"}}); !errors.As(err, &rej) || rej.Code != commands.CodeSecretUnknown {
		t.Errorf("the plan of a secret never set: %v, want %s", err, commands.CodeSecretUnknown)
	}
}
