package commands_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"meshplane/events"
)

// TestRosterRevisionOfALargeMesh: the first roster of a mesh routing more
// names than one roster.changed may carry (10,000 nodes route 20,000)
// is recorded as several events in one append, each inside an event's
// size limit, and the revision a composition names is the last; the same
// roster again appends nothing, and one more name appends one event.
func TestRosterRevisionOfALargeMesh(t *testing.T) {
	ctx := context.Background()
	h, store := setup(t)
	routes := make([]events.RosterRoute, 2*events.MaxRosterChange+100)
	for i := range routes {
		routes[i] = events.RosterRoute{Name: fmt.Sprintf("svc-%05d.mesh.example", i), Address: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256), Node: fmt.Sprintf("node-%05d", i/2)}
	}
	slices.SortFunc(routes, events.CompareRoutes)
	meta := events.Meta{At: time.Unix(1_700_000_000, 0)}
	rev, err := h.RosterRevision(ctx, routes, meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := store.ReadStream(ctx, events.RosterStream, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || rev != 3 {
		t.Fatalf("%d events, revision %d; want 3 and 3", len(evs), rev)
	}
	for _, ev := range evs {
		if len(ev.Data) > events.MaxDataSize/2 {
			t.Errorf("revision %d: %d bytes, more than half an event's limit", ev.Version, len(ev.Data))
		}
	}
	book := events.NewRosterBook(events.NewRegistry(), store)
	got, err := book.Roster(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Routes, routes) {
		t.Errorf("revision %d resolves to %d routes, want the %d recorded", rev, len(got.Routes), len(routes))
	}
	if again, err := h.RosterRevision(ctx, routes, meta); err != nil || again != rev {
		t.Errorf("the same roster again: revision %d, %v; want %d", again, err, rev)
	}
	more := append(slices.Clone(routes), events.RosterRoute{Name: "zz.mesh.example", Node: "node-00000"})
	if next, err := h.RosterRevision(ctx, more, meta); err != nil || next != rev+1 {
		t.Errorf("one name more: revision %d, %v; want %d", next, err, rev+1)
	}
}
