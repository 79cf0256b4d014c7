package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func decl(node string, n int) declaration.Declaration {
	id := node + "/" + string(rune('0'+n))
	return declaration.Declaration{
		Node: node, ID: id, Digest: declaration.Digest(id),
		Resources: []declaration.Resource{{Name: "/srv/" + id, Kind: declaration.KindDirectory, Module: "m",
			Directory: &declaration.Directory{Path: "/srv/" + id, Mode: 0o755}}},
		Correlation: "corr-" + id,
	}
}

// controllerBucket is the declarations bucket of s as the controller's
// user reaches it, on a connection of its own closed when the test ends:
// what a test reads or puts past the bus's own API.
func controllerBucket(t *testing.T, s *bus.Server) jetstream.KeyValue {
	t.Helper()
	user, err := s.Authority().Issuer().Controller()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(user.JWT, user.Seed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, bus.DeclarationsBucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// next waits for the watch's next declaration.
func next(t *testing.T, w *bus.Watch) declaration.Declaration {
	t.Helper()
	return nextOf(t, w.Updates(), "declaration")
}

// nextOf waits up to 10 s for the next value of a watch's updates, what
// it watches named in the failure.
func nextOf[T any](t *testing.T, updates <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-updates:
		if !ok {
			t.Fatalf("the %s watch ended", what)
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10s", what)
	}
	var zero T
	return zero
}

func quiet(t *testing.T, w *bus.Watch) {
	t.Helper()
	select {
	case d := <-w.Updates():
		t.Fatalf("unexpected declaration %s", d.ID)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestDeclarations(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)

	t.Run("an agent connecting after the put gets the latest", func(t *testing.T) {
		ctx := ctxT(t)
		for i := 1; i <= 3; i++ {
			if _, err := ctl.PutDeclaration(ctx, decl("late", i)); err != nil {
				t.Fatal(err)
			}
		}
		n := natstest.Node(t, s, "late")
		got, _, err := n.Latest(ctx)
		if err != nil || got.ID != "late/3" {
			t.Fatalf("Latest = %s, %v; want late/3", got.ID, err)
		}
		w, err := n.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if d := next(t, w); d.ID != "late/3" || d.Correlation != "corr-late/3" || len(d.Resources) != 1 {
			t.Fatalf("watch gave %+v, want late/3 whole", d)
		}
		quiet(t, w)
		if _, err := ctl.PutDeclaration(ctx, decl("late", 4)); err != nil {
			t.Fatal(err)
		}
		if d := next(t, w); d.ID != "late/4" {
			t.Fatalf("watch gave %s, want late/4", d.ID)
		}
	})

	t.Run("a watch before any put waits, then gets each new one", func(t *testing.T) {
		ctx := ctxT(t)
		n := natstest.Node(t, s, "early")
		if _, _, err := n.Latest(ctx); !errors.Is(err, bus.ErrNoDeclaration) {
			t.Fatalf("Latest before any put: %v, want ErrNoDeclaration", err)
		}
		w, err := n.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		quiet(t, w)
		for i := 1; i <= 2; i++ {
			if _, err := ctl.PutDeclaration(ctx, decl("early", i)); err != nil {
				t.Fatal(err)
			}
			if d := next(t, w); d.ID != decl("early", i).ID {
				t.Fatalf("watch gave %s, want %s", d.ID, decl("early", i).ID)
			}
		}
	})

	t.Run("another node's puts are not seen", func(t *testing.T) {
		ctx := ctxT(t)
		n := natstest.Node(t, s, "solo")
		w, err := n.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := ctl.PutDeclaration(ctx, decl("solo.other", 1)); err != nil {
			t.Fatal(err)
		}
		quiet(t, w)
	})

	t.Run("a slow agent finds only the newest waiting", func(t *testing.T) {
		ctx := ctxT(t)
		n := natstest.Node(t, s, "slow")
		w, err := n.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var rev uint64
		for i := 1; i <= 5; i++ {
			if rev, err = ctl.PutDeclaration(ctx, decl("slow", i)); err != nil {
				t.Fatal(err)
			}
		}
		// Wait until the watch has handled the fifth put, without taking
		// anything from it: under load a fixed sleep may not be enough.
		for deadline := time.Now().Add(15 * time.Second); bus.WatchSeen(w) < rev; {
			if time.Now().After(deadline) {
				t.Fatalf("the watch handled revision %d of %d within 15s", bus.WatchSeen(w), rev)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if d := next(t, w); d.ID != "slow/5" {
			t.Fatalf("watch gave %s, want slow/5 (the newest only)", d.ID)
		}
		quiet(t, w)
	})

	t.Run("the controller reads back what it put", func(t *testing.T) {
		ctx := ctxT(t)
		if _, _, err := ctl.Declaration(ctx, "never"); !errors.Is(err, bus.ErrNoDeclaration) {
			t.Fatalf("Declaration of a node never pushed: %v, want ErrNoDeclaration", err)
		}
		rev, err := ctl.PutDeclaration(ctx, decl("back", 1))
		if err != nil {
			t.Fatal(err)
		}
		d, got, err := ctl.Declaration(ctx, "back")
		if err != nil || d.ID != "back/1" || d.Digest != decl("back", 1).Digest || got != rev {
			t.Fatalf("Declaration = %s %s rev %d, %v; want back/1 rev %d", d.ID, d.Digest, got, err, rev)
		}
	})

	t.Run("a value that is not the node's declaration is refused and counted", func(t *testing.T) {
		ctx := ctxT(t)
		kv := controllerBucket(t, s)
		n := natstest.Node(t, s, "victim")
		w, err := n.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		other, _ := json.Marshal(decl("other", 1))
		for i, v := range [][]byte{[]byte("{not json"), other} {
			if _, err := kv.Put(ctx, "victim", v); err != nil {
				t.Fatal(err)
			}
			quiet(t, w)
			if got := w.Refused(); got != uint64(i+1) {
				t.Fatalf("refused %d, want %d", got, i+1)
			}
		}
		if _, _, err := n.Latest(ctx); !errors.Is(err, bus.ErrBadDeclaration) {
			t.Fatalf("Latest of a bad value: %v, want ErrBadDeclaration", err)
		}
		if _, err := ctl.PutDeclaration(ctx, decl("victim", 1)); err != nil {
			t.Fatal(err)
		}
		if d := next(t, w); d.ID != "victim/1" {
			t.Fatalf("watch gave %s after the refusals, want victim/1", d.ID)
		}
	})

	t.Run("a bad node name is refused", func(t *testing.T) {
		if _, err := ctl.PutDeclaration(ctxT(t), decl("Bad Name", 1)); !errors.Is(err, bus.ErrBadNode) {
			t.Fatalf("put for a bad node name: %v, want ErrBadNode", err)
		}
	})

	t.Run("closing the node ends the watch", func(t *testing.T) {
		n := natstest.Node(t, s, "closer")
		w, err := n.Watch(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		n.Close()
		done := make(chan struct{})
		go func() {
			for range w.Updates() {
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Updates still open 10s after the node closed")
		}
	})

	t.Run("Stop closes Updates", func(t *testing.T) {
		n := natstest.Node(t, s, "stopper")
		w, err := n.Watch(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		for range w.Updates() {
		}
	})
}
