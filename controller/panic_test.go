package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/internal/safego"
)

// panicBus is a publisher that panics on node a's declarations while boom
// is set.
type panicBus struct {
	*bus
	boom atomic.Bool
}

func (b *panicBus) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	if d.Node == "a" && b.boom.Load() {
		panic("bus client bug")
	}
	return b.bus.PutDeclaration(ctx, d)
}

// TestPushPanicFailsItsNodeAlone: a node whose push panics has that in its
// push result, counted (controller.push); the other nodes are pushed; the
// interval pass with the same panic carries on (controller.pass keeps
// running), and pushes the node once it stops panicking.
func TestPushPanicFailsItsNodeAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memstore.New()
	defer store.Close()
	pb := &panicBus{bus: newBus()}
	ticks := make(chan time.Time)
	passed := make(chan struct{})
	ctrl, err := controller.New(controller.Config{Store: store, Publisher: pb, Ticks: ticks, Logger: quiet,
		Passed: func() { passed <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(runCtx) }()
	<-passed // Run's first pass, before there is anything to push
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v, want a clean stop", err)
		}
	}()
	if _, err := ctrl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.DefineModules(ctx, api.DefineModulesRequest{Operator: "x", Modules: []api.ModuleDefinition{mod("forge")}}); err != nil {
		t.Fatal(err)
	}
	pb.boom.Store(true)
	before := safego.Panics()["controller.push"]
	// a's declaration changes; its push, with the command, panics.
	if _, err := ctrl.Assign(ctx, api.ModuleNodeRequest{Operator: "x", Module: "forge", Node: "a"}); err != nil {
		t.Fatalf("assign: %v", err)
	}
	res, err := ctrl.Push(ctx, api.PushRequest{Operator: "x"})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	byNode := map[string]api.PushResult{}
	for _, p := range res.Pushes {
		byNode[p.Node] = p
	}
	if e := byNode["a"].Error; !strings.Contains(e, "controller.push: panic: bus client bug") {
		t.Errorf("a's result %+v, want the panic", byNode["a"])
	}
	if byNode["b"].Error != "" || byNode["b"].Declaration == "" {
		t.Errorf("b's result %+v, want pushed", byNode["b"])
	}
	tick := func() { ticks <- time.Now(); <-passed }
	tick() // a's changed declaration, never handed over, panics again
	if d := safego.Panics()["controller.push"] - before; d != 3 {
		t.Errorf("controller.push panics counted %d, want 3 (the assign's push, the push, the pass)", d)
	}
	pb.boom.Store(false)
	puts := pb.counts()["a"]
	tick()
	if got := pb.counts()["a"]; got != puts+1 {
		t.Errorf("a put %d times after the panic stopped, want once", got-puts)
	}
}

// panicStore is a store whose subscription panics.
type panicStore struct{ *memstore.Store }

func (panicStore) Subscribe(context.Context, uint64, func(events.Event) error) error {
	panic("subscription bug")
}

// TestRunStopsOnAProjectionsPanic: the projections are a loop the
// controller cannot run without: their panic is Run's error (ErrPanic),
// which the process turns into exit 70.
func TestRunStopsOnAProjectionsPanic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memstore.New()
	defer store.Close()
	ctrl, err := controller.New(controller.Config{Store: panicStore{store}, Publisher: newBus(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = ctrl.Run(ctx)
	pe, ok := safego.As(err)
	if !ok || !errors.Is(err, safego.ErrPanic) || pe.Where != "controller.projections" {
		t.Fatalf("Run = %v, want the projections' panic", err)
	}
}

// quiet discards the log of the panics these tests make.
var quiet = slog.New(slog.DiscardHandler)
