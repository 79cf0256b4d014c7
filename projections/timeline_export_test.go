package projections_test

import (
	"context"
	"reflect"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// TestShowEventIsTheFoldedEntry: every entry of a simulated history,
// rendered again from its stored event and its EntryKeys (as timeline.db
// does), is the entry the timeline folded; compact reports (held_since),
// pushed and apply entries naming their declaration and heavy passes
// included.
func TestShowEventIsTheFoldedEntry(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, 4000); err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	tl := projections.NewTimeline()
	if err := projections.NewRunner(store, reg, tl).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	want := tl.Query(projections.Filter{})
	keys, err := tl.TakeKeys()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(want) || len(keys) == 0 {
		t.Fatalf("%d keys, %d entries", len(keys), len(want))
	}
	read := func(pos uint64) (events.Event, events.Payload) {
		t.Helper()
		evs, err := store.ReadAll(ctx, pos-1, 1)
		if err != nil || len(evs) != 1 {
			t.Fatalf("read %d: %v", pos, err)
		}
		p, err := reg.Decode(evs[0])
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := p.(events.DeclarationComposed); ok { // as a reader hands it out: its roster and resources in full
			if c, err = events.NewResourceBook(reg, store).Resolve(ctx, evs[0], c); err != nil {
				t.Fatal(err)
			}
			if p, err = events.NewRosterBook(reg, store).Resolve(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		return evs[0], p
	}
	var compact, heldAt, withDecl, heavy int
	for i, k := range keys {
		ev, p := read(k.Position)
		var decl *events.DeclarationComposed
		if k.Fold.Decl != 0 {
			_, dp := read(k.Fold.Decl)
			d := dp.(events.DeclarationComposed)
			decl = &d
			withDecl++
		}
		var held []events.Held
		if a, ok := p.(events.ApplyReported); ok && a.HeldSince != "" {
			h, err := events.HeldOf(ctx, store, reg, ev.Stream, a.HeldSince)
			if err != nil {
				t.Fatal(err)
			}
			held = h
			compact++
			if k.Fold.Held != 0 { // where the fold saw the list carried: the same list
				_, hp := read(k.Fold.Held)
				if got := hp.(events.ApplyReported).Held; !reflect.DeepEqual(got, h) {
					t.Fatalf("entry at %d: the report at %d holds %v, held_since names %v", k.Position, k.Fold.Held, got, h)
				}
				heldAt++
			}
		}
		if k.Fold.Heavy {
			heavy++
		}
		if got := projections.ShowEvent(ev, p, k.Fold, decl, held); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("entry at %d:\n got %+v\nwant %+v", k.Position, got, want[i])
		}
		if k.Position != want[i].Position || k.Node != want[i].Node || k.Type != want[i].Type ||
			!reflect.DeepEqual(k.Modules, want[i].Modules) || !reflect.DeepEqual(k.Resources, want[i].Resources) {
			t.Fatalf("keys at %d: %+v, entry %+v", k.Position, k, want[i])
		}
	}
	if compact == 0 || heldAt == 0 || withDecl == 0 || heavy == 0 {
		t.Errorf("the history has %d compact reports (%d with the position of their held list), %d entries naming a declaration, %d heavy passes: want some of each", compact, heldAt, withDecl, heavy)
	}
}
