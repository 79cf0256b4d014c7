package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

const token = "s3cret-token-for-tests"

// fakeBus records every declaration put, per node.
type fakeBus struct {
	mu   sync.Mutex
	puts map[string][]declaration.Declaration
}

func (b *fakeBus) PutDeclaration(_ context.Context, d declaration.Declaration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.puts == nil {
		b.puts = map[string][]declaration.Declaration{}
	}
	b.puts[d.Node] = append(b.puts[d.Node], d)
	return nil
}

func (b *fakeBus) latest(node string) (declaration.Declaration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ds := b.puts[node]
	if len(ds) == 0 {
		return declaration.Declaration{}, false
	}
	return ds[len(ds)-1], true
}

// env is a controller over a memstore, running, served over HTTP.
type env struct {
	ctx    context.Context
	store  *memstore.Store
	bus    *fakeBus
	ctrl   *controller.Controller
	srv    *httptest.Server
	client *httpapi.Client
}

// clock is a deterministic clock: a second per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store := memstore.New()
	bus := &fakeBus{}
	clk := &clock{t: time.Date(2026, 9, 29, 22, 0, 0, 0, time.UTC)}
	ticks := make(chan time.Time)
	ctrl, err := controller.New(controller.Config{Store: store, Publisher: bus, Clock: clk.now, Ticks: ticks, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	srv := httptest.NewServer(httpapi.Handler(ctrl, token))
	client, err := httpapi.NewClient(srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller stopped with %v, want a clean stop", err)
		}
		store.Close()
	})
	return &env{ctx: ctx, store: store, bus: bus, ctrl: ctrl, srv: srv, client: client}
}

func (e *env) head(t testing.TB) uint64 {
	t.Helper()
	h, err := e.store.Head(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// module is a module with one container serving one routed name.
func module(name string) api.ModuleDefinition {
	return api.ModuleDefinition{Module: name, Spec: events.ModuleSpec{
		Routes: []string{name + ".mesh.example"},
		Containers: []events.ContainerSpec{{
			Name: name + "-web", Image: "registry.example/" + name + ":1",
			Mounts: []events.Mount{{Source: "/var/lib/" + name}},
		}},
	}}
}

// must returns v, failing the test on err: must(call())(t).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%v", err)
		}
		return v
	}
}

// setup makes a small mesh through svc: nodes a and b (b adopted), modules
// forge and photos, forge assigned to a, photos assigned to b and taken.
func setup(t testing.TB, ctx context.Context, svc api.Service) {
	t.Helper()
	op := "tester"
	must(svc.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a", "b"}}))(t)
	must(svc.DefineModules(ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{module("forge"), module("photos")}}))(t)
	must(svc.SetSetting(ctx, api.SetSettingRequest{Operator: op, Node: "a", Key: events.SettingPrivateAddress, Value: "10.0.0.1"}))(t)
	must(svc.AdoptNode(ctx, api.NodeRequest{Operator: op, Node: "b"}))(t)
	must(svc.Assign(ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"}))(t)
	must(svc.Assign(ctx, api.ModuleNodeRequest{Operator: op, Module: "photos", Node: "b"}))(t)
	must(svc.Take(ctx, api.ModuleNodeRequest{Operator: op, Module: "photos", Node: "b"}))(t)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%T %v", errors.Unwrap(err), err)
}
