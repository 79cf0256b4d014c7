package projections

import (
	"errors"
	"slices"
	"testing"

	"meshplane/events"
)

func TestRoster(t *testing.T) {
	r9 := []string{"drive.novox.be", "g14.internal"}
	r10 := []string{"drive.novox.be", "g14.internal", "searxng.zurag.be"}
	a := resources("m", 3, "A")
	b := slices.Clone(a[1:])
	b[0].Digest = "sha256:changed"
	b = append(b, events.ResourceRef{Name: "m-9", Module: "m", Digest: "new"})
	g := newGen(t).
		composed("novox", "novox/1", "A", r9, a).
		composed("novox", "novox/2", "B", r10, b).
		composed("g14", "g14/1", "C", r10, nil)
	r := g.folded().Roster

	tests := []struct {
		node, name string
		want       bool
	}{
		{"novox", "searxng.zurag.be", true},
		{"novox", "drive.novox.be", true},
		{"novox", "nope.example", false},
		{"g14", "searxng.zurag.be", true},
	}
	for _, tc := range tests {
		got, err := r.Contains(tc.node, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("Contains(%s, %s) = %v, %v; want %v", tc.node, tc.name, got, err, tc.want)
		}
	}
	if _, err := r.Contains("ghost", "x"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("Contains(ghost) = %v, want ErrUnknownNode", err)
	}

	h, err := r.History("novox")
	if err != nil || len(h) != 2 || h[0].Declaration != "novox/1" || h[1].Declaration != "novox/2" {
		t.Fatalf("history %+v, %v", h, err)
	}
	if cur, _ := r.Current("novox"); cur.Digest != "B" || cur.Correlation != "c-novox/2" {
		t.Errorf("current %+v", cur)
	}

	d, err := r.Diff("novox", "novox/1", "novox/2")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want []string) {
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("added", d.Added, []string{"searxng.zurag.be"})
	check("removed", d.Removed, nil)
	check("resources added", d.ResourcesAdded, []string{"m-9"})
	check("resources removed", d.ResourcesRemoved, []string{"m-0"})
	check("resources changed", d.ResourcesChanged, []string{"m-1"})

	back, err := r.Diff("novox", "novox/2", "novox/1")
	if err != nil {
		t.Fatal(err)
	}
	check("back: removed", back.Removed, []string{"searxng.zurag.be"})

	if _, err := r.Diff("novox", "novox/1", "novox/7"); !errors.Is(err, ErrUnknownDeclaration) {
		t.Errorf("Diff to an unknown declaration = %v, want ErrUnknownDeclaration", err)
	}
	if _, err := r.Diff("ghost", "a", "b"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("Diff on an unknown node = %v, want ErrUnknownNode", err)
	}
}

// TestRosterSharesEqualSlices checks that a quiet history does not keep a
// copy of the roster per declaration.
func TestRosterSharesEqualSlices(t *testing.T) {
	g := newGen(t).
		composed("novox", "novox/1", "A", []string{"a", "b"}, resources("m", 2, "A")).
		composed("novox", "novox/2", "A", []string{"a", "b"}, resources("m", 2, "A"))
	h, err := g.folded().Roster.History("novox")
	if err != nil {
		t.Fatal(err)
	}
	if &h[0].Roster[0] != &h[1].Roster[0] || &h[0].Resources[0] != &h[1].Resources[0] {
		t.Error("equal consecutive rosters or resources are not shared")
	}
}
