package commands_test

import (
	"context"
	"slices"
	"testing"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
)

// TestStoredRefersToTheResourcesCarriedLast: a push whose resources are
// those of the node's last declaration that carried them (a roster-only
// change) stores the declaration by reference to it (resources_since, no
// resources, no specs); a push whose resources changed carries them again,
// and so does the one after a reference the stream did not carry last (a
// forged history), whose resources the node cannot know.
func TestStoredRefersToTheResourcesCarriedLast(t *testing.T) {
	ctx := context.Background()
	h, store := setup(t)
	mesh(t, h)
	reg := events.NewRegistry()
	send := func(context.Context, declaration.Declaration) error { return nil }
	route := func(module, name string) commands.Command {
		return commands.DefineModule{Module: module, Spec: events.ModuleSpec{Routes: []string{name},
			Containers: []events.ContainerSpec{{Name: module, Image: module + ":1"}}}}
	}
	var carried events.Event // the last declaration of novox that carried its resources
	steps := []struct {
		name   string
		before []commands.Command
		forge  bool // append a declaration naming an id no event has first
		byRef  bool
	}{
		{"first: in full", nil, false, false},
		{"a name added elsewhere: by reference", []commands.Command{route("wiki", "wiki.zurag.be"), commands.AssignModule{Module: "wiki", Node: "g14"}}, false, true},
		{"a name moved elsewhere: by reference to the same", []commands.Command{commands.ReleaseModule{Module: "wiki", Node: "g14"}, commands.RegisterNode{Node: "h3"}, commands.AssignModule{Module: "wiki", Node: "h3"}}, false, true},
		{"its own resources changed: in full", []commands.Command{route("blog", "blog.novox.be"), commands.AssignModule{Module: "blog", Node: "novox"}}, false, false},
		{"a name removed elsewhere: by reference", []commands.Command{commands.ReleaseModule{Module: "wiki", Node: "h3"}}, false, true},
		{"after a forged reference: in full", []commands.Command{commands.AssignModule{Module: "wiki", Node: "h3"}}, true, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			must(t, h, s.before...)
			if s.forge {
				ev, err := reg.New("node-novox", events.DeclarationComposed{Node: "novox", Declaration: "novox/99", Digest: "sha256:ff", ResourcesSince: events.NewID().String()},
					events.Meta{ID: events.NewID(), Actor: "controller"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := store.Append(ctx, "node-novox", events.Any, ev); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := store.Head(ctx)
			c, err := commands.Compose(ctx, h, "novox", "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Push(ctx, c, send); err != nil {
				t.Fatal(err)
			}
			evs, err := store.ReadStream(ctx, "node-novox", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var ev events.Event
			for _, e := range evs {
				if e.Type == events.TypeDeclarationComposed && e.Position > before {
					ev = e
				}
			}
			if ev.Type == "" {
				t.Fatal("no declaration composed")
			}
			p, err := events.DecodeAs[events.DeclarationComposed](reg, ev)
			if err != nil {
				t.Fatal(err)
			}
			if p.ByReference() != s.byRef {
				t.Fatalf("by reference: %v, want %v: %s", p.ByReference(), s.byRef, ev.Data)
			}
			want := c.Composed().Resources
			if !s.byRef {
				if !slices.Equal(p.Resources, want) {
					t.Errorf("carries %v, want %v", p.Resources, want)
				}
				carried = ev
				return
			}
			if p.ResourcesSince != carried.ID.String() || p.Specs != nil {
				t.Errorf("names %s (specs %v), want %s, the last that carried them, and no specs", p.ResourcesSince, p.Specs, carried.ID)
			}
			got, err := events.ResourcesOf(ctx, store.(events.IDReader), reg, "node-novox", p.ResourcesSince)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("resolves to %v (%v), want %v", got, err, want)
			}
		})
	}
}
