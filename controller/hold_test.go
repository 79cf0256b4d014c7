package controller_test

import (
	"context"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events/memstore"
)

// TestHoldDefines: with HoldDefines (--push-on-define=false) a definition
// pushes nothing, and neither does the interval pass, until mesh push;
// then the edit reaches its node. Without it, a definition pushes at once.
func TestHoldDefines(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "held"}[hold], func(t *testing.T) {
			h := &harness{store: memstore.New(), bus: newBus(), ticks: make(chan time.Time)}
			ctx, cancel := contextWithCancel(t)
			h.ctx = ctx
			var err error
			h.ctrl, err = controller.New(controller.Config{Store: h.store, Publisher: h.bus, Ticks: h.ticks, DeferDefines: hold})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- h.ctrl.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			first := helloOn(t, h)
			if _, err := h.ctrl.DefineModules(h.ctx, helloDef("bonjour", "/var/lib/forge")); err != nil {
				t.Fatal(err)
			}
			h.tick()
			got := h.bus.latest("a").ID
			if !hold {
				if got == first.ID {
					t.Fatalf("the definition was not pushed (a still has %s)", got)
				}
				return
			}
			if got != first.ID {
				t.Fatalf("a held definition was pushed: a has %s, want %s until mesh push", got, first.ID)
			}
			if _, err := h.ctrl.Push(h.ctx, api.PushRequest{}); err != nil {
				t.Fatal(err)
			}
			if got := h.bus.latest("a").ID; got == first.ID {
				t.Errorf("mesh push did not push the held definition (a has %s)", got)
			}
		})
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithCancel(context.Background())
}
