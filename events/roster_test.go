package events_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
)

func rt(name, node, addr string) events.RosterRoute {
	return events.RosterRoute{Name: name, Node: node, Address: addr}
}

func TestRosterChangeThenApply(t *testing.T) {
	a := rt("a.z", "novox", "10.0.0.1")
	b := rt("b.z", "g14", "10.0.0.2")
	b2 := rt("b.z", "g14", "10.0.0.9")
	c := rt("c.z", "novox", "")
	for _, tc := range []struct {
		name          string
		from, to      []events.RosterRoute
		changed       bool
		added, remove []events.RosterRoute
	}{
		{"first", nil, []events.RosterRoute{a, b}, true, []events.RosterRoute{a, b}, nil},
		{"empty first is nothing", nil, nil, false, nil, nil},
		{"same", []events.RosterRoute{a, b}, []events.RosterRoute{a, b}, false, nil, nil},
		{"one added", []events.RosterRoute{a}, []events.RosterRoute{a, c}, true, []events.RosterRoute{c}, nil},
		{"one removed", []events.RosterRoute{a, b, c}, []events.RosterRoute{a, c}, true, nil, []events.RosterRoute{b}},
		{"address changed", []events.RosterRoute{a, b}, []events.RosterRoute{a, b2}, true, []events.RosterRoute{b2}, []events.RosterRoute{b}},
		{"all gone", []events.RosterRoute{a, b}, []events.RosterRoute{}, true, nil, []events.RosterRoute{a, b}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var from events.Roster
			if tc.from != nil {
				from = events.Roster{Revision: 4, Digest: events.RosterDigest(tc.from), Routes: tc.from}
			}
			ch, ok := from.Change(tc.to)
			if ok != tc.changed {
				t.Fatalf("Change: changed %v, want %v", ok, tc.changed)
			}
			if !ok {
				return
			}
			if ch.Revision != from.Revision+1 || !reflect.DeepEqual(ch.Added, tc.added) || !reflect.DeepEqual(ch.Removed, tc.remove) {
				t.Errorf("Change = %+v, want revision %d, added %v, removed %v", ch, from.Revision+1, tc.added, tc.remove)
			}
			next, err := from.Apply(ch)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if len(next.Routes) != len(tc.to) || len(tc.to) > 0 && !reflect.DeepEqual(next.Routes, tc.to) || next.Digest != events.RosterDigest(tc.to) {
				t.Errorf("Apply = %+v, want routes %v", next, tc.to)
			}
			if len(tc.from) > 0 && !reflect.DeepEqual(from.Routes, tc.from) {
				t.Errorf("Apply modified the roster it folded into: %v", from.Routes)
			}
		})
	}
}

func TestRosterApplyRefuses(t *testing.T) {
	a := rt("a.z", "novox", "10.0.0.1")
	from := events.Roster{Revision: 1, Digest: events.RosterDigest([]events.RosterRoute{a}), Routes: []events.RosterRoute{a}}
	for name, c := range map[string]events.RosterChanged{
		"a revision skipped":       {Revision: 3, Added: []events.RosterRoute{rt("b.z", "g14", "")}},
		"the same revision again":  {Revision: 1, Added: []events.RosterRoute{rt("b.z", "g14", "")}},
		"removes what is not held": {Revision: 2, Removed: []events.RosterRoute{rt("b.z", "g14", "")}},
		"removes another address":  {Revision: 2, Removed: []events.RosterRoute{rt("a.z", "novox", "10.9.9.9")}},
		"adds what is held":        {Revision: 2, Added: []events.RosterRoute{a}},
		"a digest not its routes":  {Revision: 2, Digest: "sha256:00", Added: []events.RosterRoute{rt("b.z", "g14", "")}},
		"adds one route twice":     {Revision: 2, Added: []events.RosterRoute{rt("b.z", "g14", ""), rt("b.z", "g14", "10.0.0.3")}},
		"removes one route twice":  {Revision: 2, Removed: []events.RosterRoute{a, a}},
	} {
		if _, err := from.Apply(c); !errors.Is(err, events.ErrRosterUnresolved) {
			t.Errorf("%s: Apply = %v, want ErrRosterUnresolved", name, err)
		}
	}
}

// TestRosterApplyUnsorted: a change decoded from a store need not list
// its routes in order; Apply folds it as it folds a sorted one.
func TestRosterApplyUnsorted(t *testing.T) {
	a, b, c := rt("a.z", "novox", "10.0.0.1"), rt("b.z", "g14", ""), rt("c.z", "g14", "")
	from := events.Roster{Revision: 1, Digest: events.RosterDigest([]events.RosterRoute{a, c}), Routes: []events.RosterRoute{a, c}}
	got, err := from.Apply(events.RosterChanged{Revision: 2, Added: []events.RosterRoute{c, b}, Removed: []events.RosterRoute{c, a}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []events.RosterRoute{b, c}; !reflect.DeepEqual(got.Routes, want) {
		t.Errorf("routes = %v, want %v", got.Routes, want)
	}
}

// TestRosterChangesCut: a change of more than MaxRosterChange routes is
// cut into events of at most that many, at consecutive revisions, each
// digest that of the roster it leaves, and folded in order they make the
// target roster; a small change is the one event Change makes.
func TestRosterChangesCut(t *testing.T) {
	mk := func(n int, addr string) []events.RosterRoute {
		out := make([]events.RosterRoute, n)
		for i := range out {
			out[i] = rt(fmt.Sprintf("n%05d.z", i), fmt.Sprintf("node-%05d", i%977), addr)
		}
		slices.SortFunc(out, events.CompareRoutes)
		return out
	}
	big := mk(2*events.MaxRosterChange+17, "10.0.0.1")
	moved := mk(events.MaxRosterChange+5, "10.0.0.2") // every address changed, and fewer names
	for _, tc := range []struct {
		name     string
		from, to []events.RosterRoute
		events   int
	}{
		{"a first roster of many routes", nil, big, 3},
		{"addresses moved and names gone", big, moved, 4}, // 4,113 removed, 2,053 added
		{"one added", big[:len(big)-1], big, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var from events.Roster
			if tc.from != nil {
				from = events.Roster{Revision: 7, Digest: events.RosterDigest(tc.from), Routes: tc.from}
			}
			cs, ok := from.Changes(tc.to)
			if !ok {
				t.Fatal("Changes: nothing to record")
			}
			if len(cs) != tc.events {
				t.Errorf("%d events, want %d", len(cs), tc.events)
			}
			cur := from
			for i, c := range cs {
				if n := len(c.Added) + len(c.Removed); n > events.MaxRosterChange {
					t.Errorf("event %d carries %d routes, over %d", i, n, events.MaxRosterChange)
				}
				if c.Revision != from.Revision+uint64(i)+1 {
					t.Errorf("event %d at revision %d, want %d", i, c.Revision, from.Revision+uint64(i)+1)
				}
				next, err := cur.Apply(c)
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if c.Digest != next.Digest {
					t.Errorf("event %d: digest %s, its roster's %s", i, c.Digest, next.Digest)
				}
				cur = next
			}
			if !reflect.DeepEqual(cur.Routes, tc.to) || cur.Digest != events.RosterDigest(tc.to) {
				t.Errorf("folded roster of %d routes, want the %d asked for", len(cur.Routes), len(tc.to))
			}
			if whole, _ := from.Change(tc.to); whole.Digest != cur.Digest {
				t.Errorf("last digest %s, Change's %s", cur.Digest, whole.Digest)
			}
		})
	}
	if _, ok := (events.Roster{}).Changes(nil); ok {
		t.Error("Changes of an empty roster to none: something to record")
	}
}

func TestRosterDigestIsTheRoutesJSON(t *testing.T) {
	// The digest of no routes is that of "[]", never of "null".
	if events.RosterDigest(nil) != events.RosterDigest([]events.RosterRoute{}) {
		t.Error("RosterDigest(nil) differs from that of an empty roster")
	}
	x := []events.RosterRoute{rt("a.z", "n", "10.0.0.1")}
	y := []events.RosterRoute{rt("a.z", "n", "10.0.0.2")}
	if events.RosterDigest(x) == events.RosterDigest(y) {
		t.Error("an address change leaves the digest")
	}
}

// rosterStore is a store holding roster revisions built from lists, and
// the stored events.
func rosterStore(t *testing.T, lists ...[]events.RosterRoute) (*memstore.Store, []events.Event) {
	t.Helper()
	ctx := context.Background()
	reg := events.NewRegistry()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	var cur events.Roster
	var out []events.Event
	for _, l := range lists {
		c, ok := cur.Change(l)
		if !ok {
			t.Fatalf("no change to %v", l)
		}
		ev, err := reg.New(events.RosterStream, c, events.Meta{ID: events.NewID(), At: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := st.Append(ctx, events.RosterStream, events.Exactly(cur.Revision), ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, stored...)
		if cur, err = cur.Apply(c); err != nil {
			t.Fatal(err)
		}
	}
	return st, out
}

func TestRosterBookResolves(t *testing.T) {
	ctx := context.Background()
	reg := events.NewRegistry()
	A := []events.RosterRoute{rt("a.z", "novox", "10.0.0.1"), rt("b.z", "g14", "10.0.0.2")}
	B := []events.RosterRoute{rt("a.z", "novox", "10.0.0.1")}
	st, _ := rosterStore(t, A, B, A)
	for _, tc := range []struct {
		rev   uint64
		names []string
	}{{3, []string{"a.z", "b.z"}}, {2, []string{"a.z"}}, {1, []string{"a.z", "b.z"}}, {3, []string{"a.z", "b.z"}}} {
		book := events.NewRosterBook(reg, st)
		got, err := book.Names(ctx, tc.rev)
		if err != nil || !slices.Equal(got, tc.names) {
			t.Errorf("a fresh book: Names(%d) = %v, %v; want %v", tc.rev, got, err, tc.names)
		}
	}
	book := events.NewRosterBook(reg, st)
	for _, tc := range []struct {
		rev   uint64
		names []string
	}{{2, []string{"a.z"}}, {3, []string{"a.z", "b.z"}}, {1, []string{"a.z", "b.z"}}, {2, []string{"a.z"}}} {
		got, err := book.Names(ctx, tc.rev)
		if err != nil || !slices.Equal(got, tc.names) {
			t.Errorf("one book, in turn: Names(%d) = %v, %v; want %v", tc.rev, got, err, tc.names)
		}
	}
	if _, err := book.Names(ctx, 4); !errors.Is(err, events.ErrRosterUnresolved) {
		t.Errorf("a revision past the stream's end: %v, want ErrRosterUnresolved", err)
	}
	if _, err := events.NewRosterBook(reg, nil).Names(ctx, 1); !errors.Is(err, events.ErrRosterUnresolved) {
		t.Errorf("no reader: %v, want ErrRosterUnresolved", err)
	}
}

// readCounter counts the events a RosterBook reads through it.
type readCounter struct {
	events.StreamReader
	reads, events int
}

func (c *readCounter) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	evs, err := c.StreamReader.ReadStream(ctx, stream, after, limit)
	c.reads++
	c.events += len(evs)
	return evs, err
}

// TestRosterBookKeepsRecentRevisions: a book that folded a roster's
// stream answers the revisions just below its latest without a read, and
// reads an older one from the newest it keeps below it, not from 0.
func TestRosterBookKeepsRecentRevisions(t *testing.T) {
	ctx := context.Background()
	reg := events.NewRegistry()
	var rosters [][]events.RosterRoute
	for i := range 30 {
		var r []events.RosterRoute
		for j := 0; j <= i%5; j++ {
			r = append(r, rt(fmt.Sprintf("n%d.z", j), "novox", fmt.Sprintf("10.0.%d.%d", i, j)))
		}
		rosters = append(rosters, r)
	}
	st, stored := rosterStore(t, rosters...)
	want := func(rev uint64) []string { // the names of revision rev, folded from 0
		var cur events.Roster
		for _, ev := range stored[:rev] {
			c, err := events.DecodeAs[events.RosterChanged](reg, ev)
			if err != nil {
				t.Fatal(err)
			}
			if cur, err = cur.Apply(c); err != nil {
				t.Fatal(err)
			}
		}
		return cur.Names()
	}
	rc := &readCounter{StreamReader: st}
	book := events.NewRosterBook(reg, rc)
	for _, ev := range stored {
		c, err := events.DecodeAs[events.RosterChanged](reg, ev)
		if err != nil {
			t.Fatal(err)
		}
		book.Fold(c)
	}
	for _, tc := range []struct {
		rev           uint64
		reads, events int // what answering it reads
	}{
		{30, 0, 0}, {29, 0, 0}, {22, 0, 0}, // the latest and the 8 below it are held
		{21, 1, 21},          // below them: read from 0
		{20, 1, 20},          // 21 is kept now, but it is above: from 0 again
		{21, 0, 0},           // kept, as the one used last
		{22, 0, 0},           // kept: used after 23 to 28
		{5, 1, 5}, {7, 1, 2}, // 7 is read on from 5
		{23, 1, 1}, // 23, used longest ago, was dropped: read on from 22
		{30, 0, 0}, // the latest is always held
	} {
		rc.reads, rc.events = 0, 0
		got, err := book.Names(ctx, tc.rev)
		if err != nil || !slices.Equal(got, want(tc.rev)) {
			t.Errorf("Names(%d) = %v, %v; want %v", tc.rev, got, err, want(tc.rev))
		}
		if rc.reads != tc.reads || rc.events != tc.events {
			t.Errorf("Names(%d) read %d time(s), %d event(s); want %d, %d", tc.rev, rc.reads, rc.events, tc.reads, tc.events)
		}
	}
}

func TestPublicResolvesRosterRevision(t *testing.T) {
	ctx := context.Background()
	reg := events.NewRegistry()
	A := []events.RosterRoute{rt("a.z", "novox", "10.0.0.1"), rt("b.z", "g14", "10.0.0.2")}
	B := []events.RosterRoute{rt("a.z", "novox", "10.0.0.1")}
	st, revs := rosterStore(t, A, B)
	at := time.Date(2026, 9, 29, 22, 47, 0, 0, time.UTC)
	mk := func(p events.DeclarationComposed) events.Event {
		ev, err := reg.New(events.NodeStream("novox"), p, events.Meta{ID: events.NewID(), At: at})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	refs := []events.ResourceRef{{Name: "ca", Kind: "container", Module: "m", Digest: "sha256:01"}}
	legacy := mk(events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: "sha256:aa", Roster: []string{"old.z"}, Resources: refs})
	at1 := mk(events.DeclarationComposed{Node: "novox", Declaration: "novox/2", Digest: "sha256:bb", RosterRevision: 1, Resources: refs})
	at2 := mk(events.DeclarationComposed{Node: "novox", Declaration: "novox/3", Digest: "sha256:cc", RosterRevision: 2, Resources: refs})
	if strings.Contains(string(at1.Data), `"roster":`) {
		t.Fatalf("the stored form carries a roster: %s", at1.Data)
	}
	for _, tc := range []struct {
		name string
		seen []events.Event // handed to the Public first
		ev   events.Event
		want string // the roster the public form gives; "" the stored bytes
	}{
		{"legacy, as stored", nil, legacy, ""},
		{"revision 1 from the store", nil, at1, `["a.z","b.z"]`},
		{"revision 2 from the store", nil, at2, `["a.z"]`},
		{"revision 2 from what it saw", revs, at2, `["a.z"]`},
		{"revision 1 after seeing 2", revs, at1, `["a.z","b.z"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := events.NewPublic(reg, st)
			for _, ev := range tc.seen {
				if _, err := pub.Event(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			got, err := pub.Event(ctx, tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			want := string(tc.ev.Data)
			if tc.want != "" {
				want = want[:len(want)-1] + `,"roster":` + tc.want + `}`
			}
			if string(got.Data) != want {
				t.Errorf("public form:\n got %s\nwant %s", got.Data, want)
			}
			if tc.want == "" {
				return
			}
			c, err := events.DecodeAs[events.DeclarationComposed](reg, got)
			if err != nil {
				t.Fatal(err)
			}
			back, err := events.StoredComposedData(got.Data, c.Roster)
			if err != nil || string(back) != string(tc.ev.Data) {
				t.Errorf("stored form back: %s, %v; want %s", back, err, tc.ev.Data)
			}
		})
	}
	// A revision the store does not hold fails the hand-out, naming it.
	far := mk(events.DeclarationComposed{Node: "novox", Declaration: "novox/4", Digest: "sha256:dd", RosterRevision: 9, Resources: refs})
	if _, err := events.NewPublic(reg, st).Event(ctx, far); !errors.Is(err, events.ErrRosterUnresolved) {
		t.Errorf("revision 9: %v, want ErrRosterUnresolved", err)
	}
}
