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
		{"STEPS.md example", events.ApplyReported{Applied: 3, Held: held("ca", "route-proxy")},
			"applied 3 resource(s), 1 held for untaken modules (route-proxy: 1)"},
		{"DESIGN.md rule 3, largest first", events.ApplyReported{Applied: 330, Held: append(
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
		if got := tc.r.Heavy(tc.declared); got != tc.want {
			t.Errorf("%s: Heavy = %v, want %v", tc.name, got, tc.want)
		}
	}
}
