package declaration

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var testRoutes = []Route{
	{Name: "a.mesh.example", Address: "10.0.0.1", Node: "a"},
	{Name: "b<&>.mesh.example", Node: "b"},
	{Name: "b<&>.mesh.example", Address: "10.0.0.3", Node: "c"},
}

func TestHostsFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routes []Route
		want   string
	}{
		{"none", nil, "# meshplane roster: every routed name in the mesh. Rewritten in place.\n"},
		{"every kind", testRoutes, "# meshplane roster: every routed name in the mesh. Rewritten in place.\n" +
			"10.0.0.1\ta.mesh.example\n" +
			"# b<&>.mesh.example: served by b, which has no private address yet\n" +
			"10.0.0.3\tb<&>.mesh.example\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostsFile(tc.routes); got != tc.want {
				t.Errorf("HostsFile:\n%s\nwant:\n%s", got, tc.want)
			}
			if got := NewRoster(1, tc.routes).Hosts(); got != tc.want {
				t.Errorf("NewRoster(...).Hosts():\n%s\nwant:\n%s", got, tc.want)
			}
			if got := (Roster{Revision: 1, Routes: tc.routes}).Hosts(); got != tc.want {
				t.Errorf("a Roster literal's Hosts():\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// composed is a declaration composed against roster r, as the controller
// holds it (carrying the roster) before it travels.
func composed(r Roster) Declaration {
	d := Declaration{Node: "n1", ID: "n1/4", Resources: []Resource{{Name: "p", Kind: KindContainer, Container: &Container{Image: "proxy:1"}}},
		Roster: r.Routes, Hosts: r.Hosts(), RosterRevision: r.Revision, RosterDigest: r.Digest}
	d.Digest = d.SpecDigest()
	return d
}

func TestFill(t *testing.T) {
	r7 := NewRoster(7, testRoutes)
	r8 := NewRoster(8, testRoutes[:1])
	wire := composed(r7).Wire()
	forged := r7
	forged.Digest = r8.Digest
	older := Declaration{Node: "n1", ID: "n1/2", Roster: testRoutes[:1], Hosts: HostsFile(testRoutes[:1])} // RosterRevision 0
	carrying := composed(r7)                                                                               // a controller before the roster travelled once
	for _, tc := range []struct {
		name      string
		d         Declaration
		held      Roster
		wantErr   bool
		wantHosts string
		wantNames []string // in the error
	}{
		{name: "the roster it names", d: wire, held: r7, wantHosts: r7.Hosts()},
		{name: "another revision", d: wire, held: r8, wantErr: true, wantNames: []string{"revision 7", "revision 8"}},
		{name: "no roster held", d: wire, held: Roster{}, wantErr: true, wantNames: []string{"revision 7", "holding none"}},
		{name: "its revision with another digest", d: wire, held: forged, wantErr: true, wantNames: []string{"revision 7", r7.Digest, r8.Digest}},
		{name: "an older controller's, revision 0", d: older, held: r8, wantHosts: older.Hosts},
		{name: "one that carries its roster", d: carrying, held: r8, wantHosts: carrying.Hosts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.d.Fill(tc.held)
			if tc.wantErr {
				if !errors.Is(err, ErrRosterNotHeld) {
					t.Fatalf("Fill: %v, want ErrRosterNotHeld", err)
				}
				for _, s := range tc.wantNames {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %q", err, s)
					}
				}
				if got.Hosts != "" || got.Roster != nil {
					t.Errorf("a refused Fill set the roster: %q", got.Hosts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Hosts != tc.wantHosts {
				t.Errorf("hosts:\n%s\nwant:\n%s", got.Hosts, tc.wantHosts)
			}
			if got.NamesRoster() {
				t.Error("a filled declaration still names a roster it lacks")
			}
			if got.Digest != tc.d.Digest || got.ID != tc.d.ID {
				t.Errorf("Fill changed the declaration's identity: %s %s", got.ID, got.Digest)
			}
		})
	}
}

func TestWire(t *testing.T) {
	r := NewRoster(3, testRoutes)
	d := composed(r)
	w := d.Wire()
	if w.Roster != nil || w.Hosts != "" || !w.NamesRoster() {
		t.Fatalf("the wire form carries the roster: %d routes, %d bytes of hosts", len(w.Roster), len(w.Hosts))
	}
	if w.Digest != d.Digest || w.RosterRevision != 3 || w.RosterDigest != r.Digest {
		t.Fatalf("the wire form lost what names its roster: %+v", w)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if full, _ := json.Marshal(d); len(b) >= len(full) || strings.Contains(string(b), "a.mesh.example") {
		t.Fatalf("the wire form is %d bytes, the full one %d: %s", len(b), len(full), b)
	}
	var back Declaration
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	filled, err := back.Fill(r)
	if err != nil {
		t.Fatal(err)
	}
	if filled.Hosts != d.Hosts || len(filled.Roster) != len(d.Roster) {
		t.Fatal("decoded and filled, the declaration is not the one composed")
	}
	older := Declaration{Node: "n1", ID: "n1/1", Roster: testRoutes, Hosts: HostsFile(testRoutes)}
	if got := older.Wire(); got.Hosts != older.Hosts || len(got.Roster) != len(testRoutes) {
		t.Fatal("a declaration naming no revision lost its roster on the wire")
	}
	if got, ok := d.RosterOf(); !ok || got.Revision != 3 || got.Digest != r.Digest || got.Hosts() != r.Hosts() {
		t.Fatalf("RosterOf = %+v, %v", got, ok)
	}
	if _, ok := w.RosterOf(); ok {
		t.Fatal("the wire form gave a roster")
	}
	if _, ok := older.RosterOf(); ok {
		t.Fatal("a declaration of revision 0 gave a roster")
	}
}

func TestRosterCheck(t *testing.T) {
	good := NewRoster(2, testRoutes)
	for _, tc := range []struct {
		name string
		r    Roster
		ok   bool
	}{
		{"good", good, true},
		{"empty", NewRoster(1, nil), true},
		{"revision 0", NewRoster(0, testRoutes), false},
		{"digest of other routes", Roster{Revision: 2, Digest: RosterDigest(testRoutes[:1]), Routes: testRoutes}, false},
		{"no digest", Roster{Revision: 2, Routes: testRoutes}, false},
		{"out of order", NewRoster(2, []Route{testRoutes[1], testRoutes[0]}), false},
		{"twice", NewRoster(2, []Route{testRoutes[0], testRoutes[0]}), false},
		{"no node", NewRoster(2, []Route{{Name: "x"}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Check()
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrBadRoster) {
				t.Fatalf("Check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestSpecDigest: a declaration's digest covers its roster by digest: it
// moves with the routes, not with how the declaration travels.
func TestSpecDigest(t *testing.T) {
	a := composed(NewRoster(1, testRoutes))
	b := composed(NewRoster(2, testRoutes[:2]))
	if a.Digest == b.Digest {
		t.Fatal("two rosters, one digest")
	}
	if w := a.Wire(); w.SpecDigest() != a.Digest {
		t.Fatal("the wire form digests otherwise than the declaration it is")
	}
	same := composed(NewRoster(9, testRoutes))
	if same.Digest != a.Digest {
		t.Fatal("the same routes at a later revision digest otherwise")
	}
	noDigest := a
	noDigest.RosterDigest = ""
	if noDigest.SpecDigest() != a.Digest {
		t.Fatal("a declaration without its roster's digest digests its routes otherwise")
	}
}
