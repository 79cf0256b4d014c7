package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
)

// failingNodeReader fails every read of one node.
type failingNodeReader struct {
	commands.Reader
	node string
}

func (r failingNodeReader) Node(ctx context.Context, name string) (commands.Node, error) {
	if name == r.node {
		return commands.Node{}, errors.New("injected: the database system is starting up")
	}
	return r.Reader.Node(ctx, name)
}

// TestPassNamesItsEvents: every event a pass over every node appends
// (declaration.composed, compose-failed, pushed, push-failed,
// roster.changed) carries the pass as its causation (events.PassCause),
// one pass per PushChanged and per push of every node; a push of a named
// node carries none. Replay cuts a history into passes on it: before, it
// guessed from the events' order (issue 31).
func TestPassNamesItsEvents(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	fail := "c" // its reads fail: its compose fails, in every pass
	pub := &batchBus{store: store, fail: map[string]bool{"b": true}}
	ctrl, err := controller.New(controller.Config{Store: store, Publisher: pub, Logger: slog.New(slog.DiscardHandler),
		ComposeReader: func(node string, r commands.Reader) commands.Reader { return failingNodeReader{r, fail} }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []commands.Command{
		commands.RegisterNode{Node: "a"}, commands.RegisterNode{Node: "b"}, commands.RegisterNode{Node: "c"},
		commands.DefineModule{Module: "web", Spec: events.ModuleSpec{Routes: []string{"web.example"},
			Containers: []events.ContainerSpec{{Name: "web", Image: "web:1"}}}},
		commands.AssignModule{Module: "web", Node: "a"}, commands.AssignModule{Module: "web", Node: "b"},
	} {
		if _, err := ctrl.Handler().Execute(ctx, "operator:tester", c); err != nil {
			t.Fatal(err)
		}
	}
	head := func() uint64 {
		h, err := store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// passesOf reads what the controller appended after from: its events'
	// passes ("" for none), and the types of the events of each.
	passesOf := func(from uint64) map[string][]string {
		evs, err := store.ReadAll(ctx, from, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, ev := range evs {
			if ev.Actor == "controller" {
				out[events.PassOf(ev)] = append(out[events.PassOf(ev)], ev.Type)
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		push func() error
		// want is how many of each type the push appends; pass whether
		// they name one pass (else none).
		want map[string]int
		pass bool
	}{
		{"a pass", func() error { _, err := ctrl.PushChanged(ctx); return err },
			map[string]int{events.TypeRosterChanged: 1, events.TypeDeclarationComposed: 2, events.TypeDeclarationPushed: 1,
				events.TypeDeclarationPushFailed: 1, events.TypeDeclarationComposeFailed: 1}, true},
		// a's push, unchanged and recorded, records nothing again.
		{"a push of every node", func() error { _, err := ctrl.Push(ctx, api.PushRequest{Operator: "tester"}); return err },
			map[string]int{events.TypeDeclarationPushFailed: 1, events.TypeDeclarationComposeFailed: 1}, true},
		{"a push of one node", func() error { _, err := ctrl.Push(ctx, api.PushRequest{Operator: "tester", Node: "b"}); return err },
			map[string]int{events.TypeDeclarationPushFailed: 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			from := head()
			if err := c.push(); err != nil {
				t.Fatal(err)
			}
			got := passesOf(from)
			if len(got) != 1 {
				t.Fatalf("the push's events name %d passes, want one: %v", len(got), got)
			}
			for pass, evs := range got {
				if (pass != "") != c.pass {
					t.Errorf("its events name pass %q, want one: %v", pass, c.pass)
				}
				count := map[string]int{}
				for _, typ := range evs {
					count[typ]++
				}
				if len(count) != len(c.want) {
					t.Errorf("appended %v, want %v", evs, c.want)
				}
				for typ, n := range c.want {
					if count[typ] != n {
						t.Errorf("%d %s, want %d: %v", count[typ], typ, n, evs)
					}
				}
			}
		})
	}
	// Two passes are two.
	before := passesOf(0)
	pub.fail = nil // b's send goes through: recorded, in a pass of its own
	from := head()
	if _, err := ctrl.PushChanged(ctx); err != nil {
		t.Fatal(err)
	}
	after := passesOf(from)
	if len(after) != 1 {
		t.Fatalf("a later pass's events name %d passes, want one: %v", len(after), after)
	}
	for pass, evs := range after {
		if _, ok := before[pass]; ok || pass == "" {
			t.Errorf("a later pass (%v) names pass %q, named before or none", evs, pass)
		}
	}
}
