package projections_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
	"meshplane/projections"
)

// quietPasses is how many quiet passes follow the hold in the far history.
const quietPasses = 10_000

// farHistory appends to store a node's history whose last report names a
// held list far behind it: a report holding ca (first), nine reports each
// holding another list (so that the first is more lists back than any
// resolver keeps in memory), then quietPasses quiet reports naming the
// first by held_since, as an agent restored from an older copy of its
// state would. It returns the held list named and the last report.
func farHistory(t *testing.T, store events.Store) ([]events.Held, events.Event) {
	t.Helper()
	ctx := context.Background()
	reg := events.NewRegistry()
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	var batch []events.Event
	add := func(p events.Payload) events.Event {
		ev, err := reg.New(events.NodeStream("novox"), p, events.Meta{ID: events.NewID(), At: at, Actor: "agent:novox"})
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Minute)
		batch = append(batch, ev)
		return ev
	}
	flush := func() {
		if _, err := store.Append(ctx, events.NodeStream("novox"), events.Any, batch...); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	add(events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: "sha256:d1",
		Resources: []events.ResourceRef{{Name: "ca", Kind: "directory", Module: "route-proxy", Digest: "sha256:ca"}}})
	held := []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found on disk, module not taken"}}
	first := add(events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 1, Unchanged: 1, Held: held})
	for i := range 9 {
		add(events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 1, Unchanged: 1,
			Held: []events.Held{{Name: fmt.Sprintf("other-%d", i), Module: "photos", Reason: "found on disk, module not taken"}}})
	}
	var last events.Event
	for i := range quietPasses {
		last = add(events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 1, Unchanged: 1, HeldSince: first.ID.String()})
		if len(batch) == 1000 || i == quietPasses-1 {
			flush()
		}
	}
	stored, err := store.(events.IDReader).ReadByID(ctx, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	return held, stored
}

func farStores(t *testing.T) map[string]events.Store {
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	mem := memstore.New()
	t.Cleanup(func() { bolt.Close(); mem.Close() })
	return map[string]events.Store{"bolt": bolt, "memstore": mem}
}

// TestHeldSinceResolvesAtAnyDistance: the last of 10,000 quiet passes,
// read alone, resolves to the held list it names through the store's id
// index; and a rebuild resolves every report, though the list named is
// more lists back than a resolver keeps, which without the lookup is
// ErrUnresolved.
func TestHeldSinceResolvesAtAnyDistance(t *testing.T) {
	for name, store := range farStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			reg := events.NewRegistry()
			held, last := farHistory(t, store)

			// The last report alone, as a reader of the tail sees it.
			a, err := events.DecodeAs[events.ApplyReported](reg, last)
			if err != nil {
				t.Fatal(err)
			}
			alone := projections.NewReports()
			if _, err := alone.Resolve(last, a); !errors.Is(err, projections.ErrUnresolved) {
				t.Fatalf("without a lookup: %v, want ErrUnresolved", err)
			}
			alone.SetLookup(projections.StoreHeldLookup(ctx, store.(events.IDReader), reg))
			got, err := alone.Resolve(last, a)
			if err != nil || fmt.Sprint(got.Held) != fmt.Sprint(held) || got.HeldSince != "" {
				t.Fatalf("the last report alone resolved to %+v, %v; want held %v", got.Held, err, held)
			}
			pub, err := events.NewPublic(reg, store.(events.IDReader)).Event(ctx, last)
			if err != nil {
				t.Fatal(err)
			}
			pa, err := events.DecodeAs[events.ApplyReported](reg, pub)
			if err != nil || fmt.Sprint(pa.Held) != fmt.Sprint(held) || pa.HeldSince != a.HeldSince {
				t.Fatalf("public form of the last report: %s (%v)", pub.Data, err)
			}

			// The projections' rebuild, and a fold from 0 without a store.
			set := projections.New()
			r := projections.NewRunner(store, reg, set.All()...)
			if err := r.Rebuild(ctx); err != nil {
				t.Fatal(err)
			}
			if kept, n := r.Failures(); n != 0 {
				t.Fatalf("rebuild: %d failure(s): %+v", n, kept)
			}
			holds, err := set.Holds.Of("novox")
			if err != nil || len(holds) != 1 || holds[0].Name != "ca" || holds[0].Module != "route-proxy" {
				t.Fatalf("holds of novox after the rebuild: %+v, %v", holds, err)
			}
			if _, n, _ := set.Status.WaitingOnTake("novox", "route-proxy"); n != 1 {
				t.Errorf("status: route-proxy waiting on take with %d held, want 1", n)
			}
			entries := set.Timeline.Query(projections.Filter{Node: "novox", Limit: 1})
			if len(entries) != 1 || entries[0].Position != last.Position || len(entries[0].Resources) != 1 || entries[0].Resources[0] != "ca" {
				t.Errorf("the timeline's last entry: %+v", entries)
			}
			bare := projections.New()
			plain := projections.NewRunner(noIDs{store}, reg, bare.All()...)
			if err := plain.Rebuild(ctx); err != nil {
				t.Fatal(err)
			}
			if _, n := plain.Failures(); n == 0 {
				t.Error("a rebuild on a store that does not read by id resolved the far report: the test proves nothing")
			}
		})
	}
}

// noIDs hides a store's ReadByID (and ScanAll).
type noIDs struct{ events.Store }
