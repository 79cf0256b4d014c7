package events_test

import (
	"reflect"
	"testing"

	"meshplane/events"
)

func held(pairs ...string) []events.Held {
	var out []events.Held
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, events.Held{Name: pairs[i], Module: pairs[i+1], Reason: "not taken"})
	}
	return out
}

func failed(n int) []events.Failed { return make([]events.Failed, n) }

func TestSummary(t *testing.T) {
	cases := []struct {
		name string
		r    events.ApplyReported
		want string
	}{
		{"nothing", events.ApplyReported{}, "applied 0 resource(s)"},
		{"applied only", events.ApplyReported{Applied: 3}, "applied 3 resource(s)"},
		{"scenario-steps example", events.ApplyReported{Applied: 3, Held: held("ca", "route-proxy")},
			"applied 3 resource(s), 1 held for untaken modules (route-proxy: 1)"},
		{"design rule 3, largest first", events.ApplyReported{Applied: 330, Held: append(
			held("p1", "photos", "p2", "photos", "p3", "photos"),
			held("r1", "route-proxy", "r2", "route-proxy", "r3", "route-proxy", "r4", "route-proxy", "r5", "route-proxy",
				"r6", "route-proxy", "r7", "route-proxy", "r8", "route-proxy", "r9", "route-proxy", "r10", "route-proxy",
				"r11", "route-proxy", "r12", "route-proxy", "r13", "route-proxy")...)},
			"applied 330 resource(s), 16 held for untaken modules (route-proxy: 13, photos: 3)"},
		{"equal counts by name", events.ApplyReported{Applied: 1, Held: held("z", "zeta", "a", "alpha", "m", "mu")},
			"applied 1 resource(s), 3 held for untaken modules (alpha: 1, mu: 1, zeta: 1)"},
		{"interleaved modules", events.ApplyReported{Applied: 2, Held: held("a", "b-mod", "b", "a-mod", "c", "b-mod")},
			"applied 2 resource(s), 3 held for untaken modules (b-mod: 2, a-mod: 1)"},
		{"failed only", events.ApplyReported{Applied: 4, Failed: failed(2)}, "applied 4 resource(s), 2 failed"},
		{"held and failed", events.ApplyReported{Applied: 3, Held: held("ca", "route-proxy"), Failed: failed(1)},
			"applied 3 resource(s), 1 held for untaken modules (route-proxy: 1), 1 failed"},
		{"other lists do not show", events.ApplyReported{Applied: 5, Created: []string{"a"}, Removed: []string{"b"},
			Replaced: []events.Replaced{{Name: "c"}}, Unchanged: 2}, "applied 5 resource(s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Summary(); got != tc.want {
				t.Errorf("Summary()\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHeldByModule(t *testing.T) {
	got := events.HeldByModule(held("a", "m2", "b", "m1", "c", "m2", "d", "m3", "e", "m1", "f", "m0"))
	want := []events.ModuleCount{{"m1", 2}, {"m2", 2}, {"m0", 1}, {"m3", 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HeldByModule = %v, want %v", got, want)
	}
	if got := events.HeldByModule(nil); len(got) != 0 {
		t.Errorf("HeldByModule(nil) = %v", got)
	}
}

func TestChanges(t *testing.T) {
	r := events.ApplyReported{
		Created: []string{"a", "b"}, Removed: []string{"c"},
		Replaced: []events.Replaced{{Name: "d"}}, Updated: []events.Replaced{{Name: "e"}},
		Held: held("f", "m"), Failed: failed(1), Unchanged: 7,
	}
	if got := r.Changes(); got != 4 {
		t.Errorf("Changes() = %d, want 4 (created, replaced, removed; not updated, held, failed)", got)
	}
}

func TestHeavy(t *testing.T) {
	three := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name     string
		r        events.ApplyReported
		declared int
		want     bool
	}{
		{"half is heavy", events.ApplyReported{Sent: 6, Created: three}, 0, true},
		{"under half is not", events.ApplyReported{Sent: 7, Created: three}, 0, false},
		{"replaced and removed count", events.ApplyReported{Sent: 4, Replaced: []events.Replaced{{Name: "a"}}, Removed: []string{"b"}}, 0, true},
		{"held and updated do not", events.ApplyReported{Sent: 2, Held: []events.Held{{Name: "a"}}, Updated: []events.Replaced{{Name: "b"}}}, 0, false},
		{"no resources is never heavy", events.ApplyReported{}, 0, false},
		{"a report without sent uses the declaration's size", events.ApplyReported{Created: three}, 6, true},
		{"sent wins over the declaration's size", events.ApplyReported{Sent: 10, Created: three}, 6, false},
	} {
		if got := events.Heavy(&tc.r, events.PassContext{Resources: tc.declared}); got != tc.want {
			t.Errorf("%s: Heavy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHeavyByContainers: half of a declaration's containers is heavy
// whatever its directories and files (seed 000 on a node of 110 containers
// among 330 resources), a container created after the apply before failed
// it is a retry, and a removed container counts by the names of earlier
// declarations.
func TestHeavyByContainers(t *testing.T) {
	names := func(ns ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range ns {
			m[n] = true
		}
		return m
	}
	cs := names("c1", "c2", "c3", "c4", "old")
	for _, tc := range []struct {
		name string
		r    events.ApplyReported
		c    events.PassContext
		want bool
	}{
		{"half of the containers, a sixth of the resources",
			events.ApplyReported{Sent: 12, Replaced: []events.Replaced{{Name: "c1"}, {Name: "c2"}}},
			events.PassContext{Containers: 4, ContainerNames: cs}, true},
		{"under half of the containers",
			events.ApplyReported{Sent: 12, Created: []string{"c1"}},
			events.PassContext{Containers: 4, ContainerNames: cs}, false},
		{"directories do not count as containers",
			events.ApplyReported{Sent: 12, Created: []string{"/d1", "/d2"}},
			events.PassContext{Containers: 4, ContainerNames: cs}, false},
		{"a removed container of an earlier declaration counts",
			events.ApplyReported{Sent: 12, Created: []string{"c1"}, Removed: []string{"old"}},
			events.PassContext{Containers: 4, ContainerNames: cs}, true},
		{"a retry is not counted",
			events.ApplyReported{Sent: 12, Created: []string{"c1", "c2"}},
			events.PassContext{Containers: 4, ContainerNames: cs, FailedBefore: names("c2")}, false},
		{"a retry still counts among the resources",
			events.ApplyReported{Sent: 4, Created: []string{"c1", "c2"}},
			events.PassContext{Containers: 4, ContainerNames: cs, FailedBefore: names("c1", "c2")}, true},
		{"no containers, no container clause",
			events.ApplyReported{Sent: 12, Created: []string{"c1"}},
			events.PassContext{ContainerNames: cs}, false},
	} {
		if got := events.Heavy(&tc.r, tc.c); got != tc.want {
			t.Errorf("%s: Heavy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPassHistory: the history learns container names from declarations and
// the failures of each apply for the next, so that a retry after a failed
// creation is quiet and a creation after the container ran is heavy.
func TestPassHistory(t *testing.T) {
	var h events.PassHistory
	res := []events.ResourceRef{{Name: "m-0", Kind: "container"}, {Name: "/etc/m", Kind: "directory"}, {Name: "/etc/m/a", Kind: "file"}, {Name: "/var/lib/m", Kind: "directory"}}
	if n := h.Composed(res); n != 1 {
		t.Fatalf("Composed counted %d containers, want 1", n)
	}
	steps := []struct {
		r    events.ApplyReported
		want bool
	}{
		// the image is not there yet: the rest is created (heavy)
		{events.ApplyReported{Sent: 4, Created: []string{"/etc/m", "/etc/m/a", "/var/lib/m"}, Failed: []events.Failed{{Name: "m-0"}}}, true},
		// the retry creates it: quiet
		{events.ApplyReported{Sent: 4, Unchanged: 3, Created: []string{"m-0"}}, false},
		// created again after it ran: heavy
		{events.ApplyReported{Sent: 4, Unchanged: 3, Created: []string{"m-0"}}, true},
	}
	for i, s := range steps {
		if got := h.Applied(&s.r, len(res), 1); got != s.want {
			t.Errorf("apply %d: heavy %v, want %v", i+1, got, s.want)
		}
	}
}
