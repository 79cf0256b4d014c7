package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
	"meshplane/events/memstore"
)

func TestPublicResourcesDataRoundTrips(t *testing.T) {
	refs := []events.ResourceRef{{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:01"}}
	for _, stored := range []string{
		`{"node":"novox","declaration":"novox/2","digest":"sha256:aa","roster_revision":3,"resources_since":"0192"}`,
		`{"node":"novox","declaration":"novox/2","digest":"sha256:aa","roster_revision":3,"resources_since":"0192","warnings":["w"],"future":{"a":[1]}}`,
	} {
		pub, err := events.PublicResourcesData([]byte(stored), refs, "")
		if err != nil {
			t.Fatal(err)
		}
		want := stored[:len(stored)-1] + `,"resources":[{"name":"web","kind":"container","module":"forge","digest":"sha256:01"}]}`
		if string(pub) != want {
			t.Errorf("public form of %s:\n got %s\nwant %s", stored, pub, want)
		}
		back, err := events.StoredResourcesData(pub, refs)
		if err != nil || string(back) != stored {
			t.Errorf("stored form back: %s, %v; want %s", back, err, stored)
		}
		// Unresolved: the note in place of the list, and the stored form back.
		noted, err := events.PublicResourcesData([]byte(stored), nil, "gone")
		if err != nil || string(noted) != stored[:len(stored)-1]+`,"resources_unknown":"gone"}` {
			t.Errorf("noted form: %s, %v", noted, err)
		}
	}
	// A public line written by hand: resources elsewhere, keys again in order.
	back, err := events.StoredResourcesData([]byte(`{"resources":[],"node":"novox","resources_since":"0192"}`), refs)
	if err != nil || string(back) != `{"node":"novox","resources_since":"0192"}` {
		t.Errorf("stored form of a hand-written line: %s, %v", back, err)
	}
	if _, err := events.PublicResourcesData([]byte(`[1]`), refs, ""); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("public form of a list: %v", err)
	}
}

// failingIDs is a store whose reads by id fail.
type failingIDs struct{ *memstore.Store }

func (failingIDs) ReadByID(context.Context, uuid.UUID) (events.Event, error) {
	return events.Event{}, errors.New("disk on fire")
}

// TestResourceBookResolves: a declaration by reference gets the resources
// of the one it names, from what the book saw or looked up by id; a
// reference that does not resolve is read with its resources unknown and
// a note, never an error; a failed read is an error.
func TestResourceBookResolves(t *testing.T) {
	ctx := context.Background()
	reg := events.NewRegistry()
	st := memstore.New()
	defer st.Close()
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	mk := func(stream string, p events.Payload) events.Event {
		ev, err := reg.New(stream, p, events.Meta{ID: events.NewID(), At: at})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Append(ctx, stream, events.Any, ev)
		if err != nil {
			t.Fatal(err)
		}
		return evs[len(evs)-1]
	}
	refs := []events.ResourceRef{{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:01"}}
	full := mk("node-novox", events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: "sha256:aa", Resources: refs})
	ref := func(since string) events.DeclarationComposed {
		return events.DeclarationComposed{Node: "novox", Declaration: "novox/2", Digest: "sha256:bb", RosterRevision: 2, ResourcesSince: since}
	}
	chained := mk("node-novox", ref(full.ID.String()))
	other := mk("node-g14", events.DeclarationComposed{Node: "g14", Declaration: "g14/1", Digest: "sha256:cc", Resources: refs})
	adopted := mk("node-novox", events.NodeAdopted{Node: "novox"})

	for _, tc := range []struct {
		name  string
		book  *events.ResourceBook
		seen  bool // the book saw full first
		since string
		want  string // the note's words; "" resolved
	}{
		{"seen", events.NewResourceBook(reg, nil), true, full.ID.String(), ""},
		{"looked up", events.NewResourceBook(reg, st), false, full.ID.String(), ""},
		{"not seen, no store", events.NewResourceBook(reg, nil), false, full.ID.String(), "no store to look it up in"},
		{"no such event", events.NewResourceBook(reg, st), false, events.NewID().String(), "no event stored under that id"},
		{"another node's", events.NewResourceBook(reg, st), false, other.ID.String(), "not a composed declaration on node-novox"},
		{"another type", events.NewResourceBook(reg, st), false, adopted.ID.String(), "node.adopted"},
		{"itself by reference", events.NewResourceBook(reg, st), false, chained.ID.String(), "carries no resources of its own"},
		{"not an id", events.NewResourceBook(reg, st), false, "novox/1", "not an event id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.seen {
				if _, err := tc.book.Resolve(ctx, full, events.DeclarationComposed{Node: "novox", Resources: refs}); err != nil {
					t.Fatal(err)
				}
			}
			ev := chained
			got, err := tc.book.Resolve(ctx, ev, ref(tc.since))
			if err != nil {
				t.Fatalf("a reference that does not resolve is an error: %v", err)
			}
			switch {
			case tc.want == "" && (len(got.Resources) != 1 || got.Resources[0] != refs[0] || got.ResourcesUnknown != ""):
				t.Errorf("resolved to %+v, note %q", got.Resources, got.ResourcesUnknown)
			case tc.want != "" && (got.Resources != nil || !strings.Contains(got.ResourcesUnknown, tc.want)):
				t.Errorf("unresolved: resources %+v, note %q; want a note saying %q", got.Resources, got.ResourcesUnknown, tc.want)
			}
		})
	}
	// A failed read is the error, not a missing declaration.
	book := events.NewResourceBook(reg, failingIDs{st})
	if _, err := book.Resolve(ctx, chained, ref(full.ID.String())); err == nil || !strings.Contains(err.Error(), "disk on fire") || errors.Is(err, events.ErrResourcesUnresolved) {
		t.Errorf("a failed read: %v", err)
	}
}

// TestPublicGivesResourcesInFull: export's and the API's form of a
// declaration by reference is the stored bytes with the resources it names
// added (and its roster after them), whether the reader saw the one named
// or looks it up; one that does not resolve is given with the note why.
func TestPublicGivesResourcesInFull(t *testing.T) {
	ctx := context.Background()
	reg := events.NewRegistry()
	st := memstore.New()
	defer st.Close()
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	var all []events.Event
	mk := func(stream string, p events.Payload) {
		ev, err := reg.New(stream, p, events.Meta{ID: events.NewID(), At: at})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Append(ctx, stream, events.Any, ev)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	refs := []events.ResourceRef{{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:01"}}
	mk(events.RosterStream, events.RosterChanged{Revision: 1, Added: []events.RosterRoute{{Name: "a.mesh", Node: "novox"}}})
	mk("node-novox", events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: "sha256:aa", RosterRevision: 1, Resources: refs})
	mk(events.RosterStream, events.RosterChanged{Revision: 2, Added: []events.RosterRoute{{Name: "b.mesh", Node: "g14"}}})
	mk("node-novox", events.DeclarationComposed{Node: "novox", Declaration: "novox/2", Digest: "sha256:bb", RosterRevision: 2, ResourcesSince: all[1].ID.String()})
	mk("node-novox", events.DeclarationComposed{Node: "novox", Declaration: "novox/3", Digest: "sha256:cc", RosterRevision: 2, ResourcesSince: events.NewID().String()})

	want := `{"node":"novox","declaration":"novox/2","digest":"sha256:bb","roster_revision":2,"resources_since":"` + all[1].ID.String() +
		`","resources":[{"name":"web","kind":"container","module":"forge","digest":"sha256:01"}],"roster":["a.mesh","b.mesh"]}`
	for _, from := range []int{0, 3} { // in order, and the by-reference one first
		p := events.NewPublic(reg, st)
		var got []events.Event
		for _, ev := range all[from:] {
			pub, err := p.Event(ctx, ev)
			if err != nil {
				t.Fatalf("from %d: %v", from, err)
			}
			got = append(got, pub)
		}
		if s := string(got[len(got)-2].Data); s != want {
			t.Errorf("from %d: public form\n got %s\nwant %s", from, s, want)
		}
		var c events.DeclarationComposed
		if err := json.Unmarshal(got[len(got)-1].Data, &c); err != nil || c.Resources != nil || !strings.Contains(c.ResourcesUnknown, "no event stored under that id") {
			t.Errorf("from %d: a reference that does not resolve: %s, %v", from, got[len(got)-1].Data, err)
		}
	}
}
