package projections_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
)

// TestComposedByReferenceFolds: a runner folds a declaration stored by
// reference with the resources it names, whether it folded the one named
// or starts after it (looked up by id), as the timeline of the same
// history in the full form says; one whose reference resolves to nothing
// (a damaged or forged history) is folded with its resources unknown and
// the note why, never refused.
func TestComposedByReferenceFolds(t *testing.T) {
	ctx := context.Background()
	reg := events.NewRegistry()
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	refs := []events.ResourceRef{
		{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:01"},
		{Name: "/var/lib/forge", Kind: "directory", Module: "forge", Digest: "sha256:02"},
	}
	build := func(byRef bool, forged bool) (*memstore.Store, []events.Event) {
		st := memstore.New()
		t.Cleanup(func() { st.Close() })
		var out []events.Event
		add := func(p events.Payload) events.Event {
			ev, err := reg.New("node-novox", p, events.Meta{ID: events.NewID(), At: at, Actor: "controller"})
			if err != nil {
				t.Fatal(err)
			}
			evs, err := st.Append(ctx, "node-novox", events.Any, ev)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, evs...)
			return evs[0]
		}
		add(events.NodeRegistered{Node: "novox"})
		first := add(events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: "sha256:aa", Roster: []string{"a"}, Resources: refs})
		second := events.DeclarationComposed{Node: "novox", Declaration: "novox/2", Digest: "sha256:bb", Roster: []string{"a", "b"}, Resources: refs}
		if byRef {
			second.Resources, second.ResourcesSince = nil, first.ID.String()
			if forged {
				second.ResourcesSince = events.NewID().String()
			}
		}
		add(second)
		return st, out
	}
	timeline := func(st events.Store, from uint64) ([]projections.Entry, *projections.Runner) {
		views := projections.New()
		// from > 0: a runner that starts after the declaration named, as
		// one resumed from its checkpoint, folds only what follows it.
		cp := projections.NewMemCheckpoints()
		if err := cp.Save(ctx, projections.DefaultCheckpoint, from); err != nil {
			t.Fatal(err)
		}
		r := projections.NewRunnerWithCheckpoints(st, reg, cp, projections.DefaultCheckpoint, views.All()...)
		if err := r.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		return views.Timeline.Query(projections.Filter{Node: "novox", Type: events.TypeDeclarationComposed, Module: "forge"}), r
	}
	fullStore, _ := build(false, false)
	want, _ := timeline(fullStore, 0)
	if len(want) != 2 {
		t.Fatalf("the full form's timeline finds %d composed declarations by module, want 2", len(want))
	}
	refStore, evs := build(true, false)
	for _, from := range []uint64{0, evs[1].Position} {
		got, r := timeline(refStore, from)
		if _, n := r.Failures(); n > 0 {
			t.Fatalf("from %d: %d failure(s)", from, n)
		}
		if len(got) == 0 {
			t.Fatalf("from %d: no composed declaration found by its module", from)
		}
		last := got[len(got)-1]
		if last.Declaration != "novox/2" || last.Summary != want[1].Summary || strings.Join(last.Modules, ",") != strings.Join(want[1].Modules, ",") {
			t.Errorf("from %d: by reference %+v\nin full %+v", from, last, want[1])
		}
	}

	forged, _ := build(true, true)
	views := projections.New()
	r := projections.NewRunner(forged, reg, views.All()...)
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if f, n := r.Failures(); n > 0 {
		t.Fatalf("a reference that does not resolve is refused: %+v", f)
	}
	got := views.Timeline.Query(projections.Filter{Node: "novox", Type: events.TypeDeclarationComposed})
	if len(got) != 2 || !strings.Contains(got[1].Summary, "its resources are unknown") || !strings.Contains(got[1].Summary, "no event stored under that id") {
		t.Errorf("a forged reference reads %+v", got)
	}
}
