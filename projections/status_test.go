package projections

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"meshplane/events"
)

func TestStatus(t *testing.T) {
	held := func(mod string, n int) []events.Held {
		out := make([]events.Held, n)
		for i := range out {
			out[i] = events.Held{Name: mod + "-h" + string(rune('a'+i)), Module: mod, Reason: "found on this adopted node"}
		}
		return out
	}
	res := append(resources("route-proxy", 3, "A"), resources("photos", 2, "A")...)
	tests := []struct {
		name      string
		build     func(g *gen)
		sync      string
		health    string
		converged bool
		waiting   map[string]int // module → held count, waiting on take
		compose   string         // the compose error shown
		read      string         // the read the compose failure names
		refused   string         // the reason of the refusal shown
	}{
		{
			name: "applied the last push: in sync, converged",
			build: func(g *gen) {
				g.assign("route-proxy", "novox").composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5})
			},
			sync: SyncInSync, health: HealthConverged, converged: true,
		},
		{
			name: "pushed and never reported: unknown, never converged",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5)
			},
			sync: SyncUnreported, health: HealthUnknown,
		},
		{
			name: "registered, assigned, never composed nor reported: unknown",
			build: func(g *gen) {
				g.assign("route-proxy", "novox")
			},
			sync: SyncUnreported, health: HealthUnknown,
		},
		{
			name: "never reported and its compose failed: failing wins over unknown",
			build: func(g *gen) {
				g.assign("route-proxy", "novox").composeFailed("novox", "", "modules opxtypo2 and opxweb both claim web")
			},
			sync: SyncUnreported, health: HealthFailing, compose: "modules opxtypo2 and opxweb both claim web",
		},
		{
			name: "a failed compose stays failing while the agent re-applies the older declaration",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					composeFailed("novox", "", "modules opxtypo2 and opxweb both claim web").
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5})
			},
			sync: SyncInSync, health: HealthFailing, compose: "modules opxtypo2 and opxweb both claim web",
		},
		{
			name: "a failed compose is cleared by the compose that succeeds after it, applied or not",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					composeFailed("novox", "", "modules opxtypo2 and opxweb both claim web").
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					composed("novox", "novox/2", "A", nil, res)
			},
			sync: SyncInSync, health: HealthConverged, converged: true,
		},
		{
			name: "a read that failed names the read, and stays failing over re-applies",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					composeFailed("novox", "node g14", "reading node g14: store unavailable").
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5})
			},
			sync: SyncInSync, health: HealthFailing, compose: "reading node g14: store unavailable", read: "node g14",
		},
		{
			name: "a later push not yet applied is pending",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					composed("novox", "novox/2", "B", nil, res).pushed("novox", "novox/2", "B", 5)
			},
			sync: SyncPending, health: HealthConverged,
		},
		{
			name: "a composed declaration that was never pushed does not make it pending",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					composed("novox", "novox/2", "B", nil, res)
			},
			sync: SyncInSync, health: HealthConverged, converged: true,
		},
		{
			name: "held resources: waiting on take, counted per module, never converged",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 1,
						Held: append(held("route-proxy", 3), held("photos", 1)...)})
			},
			sync: SyncInSync, health: HealthWaitingOnTake, waiting: map[string]int{"route-proxy": 3, "photos": 1},
		},
		{
			name: "failed resources are failing",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 3,
						Held: held("photos", 1), Failed: []events.Failed{{Name: "route-proxy-0", Error: "boom"}}})
			},
			sync: SyncInSync, health: HealthFailing, waiting: map[string]int{"photos": 1},
		},
		{
			name: "a compose failing after the last apply is failing, with its error",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					composeFailed("novox", "node g14", "reading node g14: store unavailable")
			},
			sync: SyncInSync, health: HealthFailing, compose: "reading node g14: store unavailable", read: "node g14",
		},
		{
			name: "a compose that failed and then succeeded is not failing",
			build: func(g *gen) {
				g.composeFailed("novox", "node g14", "store unavailable").
					composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5})
			},
			sync: SyncInSync, health: HealthConverged, converged: true,
		},
		{
			name: "an open churn episode is churning",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", nil, 4, 4).pass("novox", "novox/2", "B", nil, 4, 4)
			},
			sync: SyncInSync, health: HealthChurning,
		},
		{
			name: "a refused report after the last apply is failing",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5}).
					add("node-novox", "controller", "", events.ReportRefused{Node: "novox", Reason: events.RefusedCounts, Detail: "unchanged: -1", Digest: "sha256:ab", Size: 52})
			},
			sync: SyncInSync, health: HealthFailing, refused: events.RefusedCounts,
		},
		{
			name: "a refused report and never a good one: failing, unreported",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					add("node-novox", "controller", "", events.ReportRefused{Node: "novox", Reason: events.RefusedTime, Digest: "sha256:ab", Size: 52})
			},
			sync: SyncUnreported, health: HealthFailing, refused: events.RefusedTime,
		},
		{
			name: "a good report after a refused one clears it",
			build: func(g *gen) {
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 5).
					add("node-novox", "controller", "", events.ReportRefused{Node: "novox", Reason: events.RefusedCounts, Digest: "sha256:ab", Size: 52}).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 5, Applied: 5, Unchanged: 5})
			},
			sync: SyncInSync, health: HealthConverged, converged: true,
		},
		{
			name: "hand-written: composed and applied with no push, no digest, no actor",
			build: func(g *gen) {
				g.raw("node-novox", events.TypeDeclarationComposed,
					`{"node":"novox","declaration":"novox/1","digest":"sha256:d1","roster":["a"],"resources":[{"name":"web","kind":"container","module":"forge","digest":"x"}]}`).
					raw("node-novox", events.TypeApplyReported,
						`{"node":"novox","declaration":"novox/1","sent":1,"applied":1,"created":[],"replaced":[],"removed":[],"held":[],"failed":[],"unchanged":1}`)
			},
			sync: SyncInSync, health: HealthConverged, converged: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			tc.build(g)
			s := g.folded().Status
			st, err := s.Of("novox")
			if err != nil {
				t.Fatal(err)
			}
			if st.Sync != tc.sync || st.Health != tc.health {
				t.Errorf("sync %s health %s, want %s %s", st.Sync, st.Health, tc.sync, tc.health)
			}
			conv, err := s.Converged("novox")
			if err != nil || conv != tc.converged {
				t.Errorf("Converged = %v, %v; want %v", conv, err, tc.converged)
			}
			for m, n := range tc.waiting {
				w, h, err := s.WaitingOnTake("novox", m)
				if err != nil || !w || h != n {
					t.Errorf("WaitingOnTake(%s) = %v %d %v, want true %d", m, w, h, err, n)
				}
				if ms := st.Modules[m]; ms.State != HealthWaitingOnTake || ms.Held != n {
					t.Errorf("module %s: %+v, want waiting-on-take with %d held", m, ms, n)
				}
			}
			var total int
			for _, mc := range st.Held {
				total += mc.Count
				if tc.waiting[mc.Module] != mc.Count {
					t.Errorf("held %s: %d, want %d", mc.Module, mc.Count, tc.waiting[mc.Module])
				}
			}
			if len(st.Held) != len(tc.waiting) {
				t.Errorf("held %+v, want %v", st.Held, tc.waiting)
			}
			if tc.compose == "" && st.ComposeFailed != nil {
				t.Errorf("compose failure shown: %+v", st.ComposeFailed)
			}
			if tc.compose != "" && (st.ComposeFailed == nil || st.ComposeFailed.Error != tc.compose) {
				t.Errorf("compose failure %+v, want %q", st.ComposeFailed, tc.compose)
			}
			if st.ComposeFailed != nil && st.ComposeFailed.Read != tc.read {
				t.Errorf("compose failure names read %q, want %q", st.ComposeFailed.Read, tc.read)
			}
			if tc.refused == "" && st.ReportRefused != nil {
				t.Errorf("refusal shown: %+v", st.ReportRefused)
			}
			if tc.refused != "" && (st.ReportRefused == nil || st.ReportRefused.Reason != tc.refused || st.ReportRefused.Digest != "sha256:ab") {
				t.Errorf("refusal %+v, want one for %s", st.ReportRefused, tc.refused)
			}
		})
	}
}

func TestStatusDigestLookedUp(t *testing.T) {
	g := newGen(t).composed("novox", "novox/1", "sha256:d1", nil, resources("m", 1, "A")).
		raw("node-novox", events.TypeApplyReported, `{"node":"novox","declaration":"novox/1","sent":1,"applied":1}`)
	st, err := g.folded().Status.Of("novox")
	if err != nil {
		t.Fatal(err)
	}
	if st.Applied == nil || st.Applied.Digest != "sha256:d1" || st.Applied.Summary != "applied 1 resource(s)" {
		t.Errorf("applied %+v, want digest sha256:d1 and its summary", st.Applied)
	}
}

func TestStatusModules(t *testing.T) {
	g := newGen(t).assign("a", "novox").assign("b", "novox").assign("c", "novox").
		op("novox", events.ModuleTaken{Module: "a", Node: "novox"}).
		op("novox", events.ModuleReleased{Module: "c", Node: "novox"}).
		composed("novox", "novox/1", "A", nil, append(resources("a", 2, "A"), resources("b", 1, "A")...)).
		applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 3, Applied: 2, Held: []events.Held{{Name: "b-0", Module: "b"}}})
	st, err := g.folded().Status.Of("novox")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ModuleStatus{
		"a": {Assigned: true, Taken: true, State: HealthConverged},
		"b": {Assigned: true, State: HealthWaitingOnTake, Held: 1},
	}
	if len(st.Modules) != len(want) {
		t.Errorf("modules %+v, want %+v", st.Modules, want)
	}
	for m, ms := range want {
		if st.Modules[m] != ms {
			t.Errorf("module %s: %+v, want %+v", m, st.Modules[m], ms)
		}
	}
	if got := g.folded().Status.Nodes(); !slices.Equal(got, []string{"novox"}) {
		t.Errorf("nodes %v", got)
	}
}

// TestStatusPendingModules: a module assigned but absent from the applied
// declaration is pending, with the reason: the latest compose's error
// (which stays while the agent re-applies the older declaration), the
// declaration composed and not applied yet, or no compose since.
func TestStatusPendingModules(t *testing.T) {
	web := resources("opxweb", 2, "A")
	both := append(resources("opxweb", 2, "A"), resources("forge", 1, "A")...)
	apply := func(decl string, n int) events.ApplyReported {
		return events.ApplyReported{Declaration: decl, Sent: n, Applied: n, Unchanged: n}
	}
	tests := []struct {
		name   string
		build  func(g *gen)
		health string
		want   map[string]ModuleStatus
	}{
		{
			name: "a clash: the clashing module pending with the compose error, the applied one converged",
			build: func(g *gen) {
				g.assign("opxweb", "novox").composed("novox", "novox/1", "A", nil, web).pushed("novox", "novox/1", "A", 2).
					applied("novox", apply("novox/1", 2)).
					assign("opxtypo2", "novox").composeFailed("novox", "", "modules opxtypo2 and opxweb both claim web").
					applied("novox", apply("novox/1", 2))
			},
			health: HealthFailing,
			want: map[string]ModuleStatus{
				"opxweb":   {Assigned: true, State: HealthConverged},
				"opxtypo2": {Assigned: true, State: ModulePending, Reason: PendingComposeFailed + "modules opxtypo2 and opxweb both claim web"},
			},
		},
		{
			name: "no build yet: pending, naming the artifact",
			build: func(g *gen) {
				g.assign("opxweb", "novox").composed("novox", "novox/1", "A", nil, web).pushed("novox", "novox/1", "A", 2).
					applied("novox", apply("novox/1", 2)).
					assign("forge", "novox").composeFailed("novox", "", "module forge runs artifact forge/web, which has no recorded build")
			},
			health: HealthFailing,
			want: map[string]ModuleStatus{
				"opxweb": {Assigned: true, State: HealthConverged},
				"forge":  {Assigned: true, State: ModulePending, Reason: PendingComposeFailed + "module forge runs artifact forge/web, which has no recorded build"},
			},
		},
		{
			name: "composed and pushed, not applied yet",
			build: func(g *gen) {
				g.assign("opxweb", "novox").composed("novox", "novox/1", "A", nil, web).pushed("novox", "novox/1", "A", 2).
					applied("novox", apply("novox/1", 2)).
					assign("forge", "novox").composed("novox", "novox/2", "B", nil, both).pushed("novox", "novox/2", "B", 3)
			},
			health: HealthConverged,
			want: map[string]ModuleStatus{
				"opxweb": {Assigned: true, State: HealthConverged},
				"forge":  {Assigned: true, State: ModulePending, Reason: "in novox/2, not applied yet"},
			},
		},
		{
			name: "assigned after the latest compose",
			build: func(g *gen) {
				g.assign("opxweb", "novox").composed("novox", "novox/1", "A", nil, web).pushed("novox", "novox/1", "A", 2).
					applied("novox", apply("novox/1", 2)).assign("forge", "novox")
			},
			health: HealthConverged,
			want: map[string]ModuleStatus{
				"opxweb": {Assigned: true, State: HealthConverged},
				"forge":  {Assigned: true, State: ModulePending, Reason: PendingNotComposed},
			},
		},
		{
			name: "the compose that succeeds and its apply clear it",
			build: func(g *gen) {
				g.assign("opxweb", "novox").composed("novox", "novox/1", "A", nil, web).pushed("novox", "novox/1", "A", 2).
					applied("novox", apply("novox/1", 2)).
					assign("forge", "novox").composeFailed("novox", "", "no build").
					composed("novox", "novox/2", "B", nil, both).pushed("novox", "novox/2", "B", 3).
					applied("novox", apply("novox/2", 3))
			},
			health: HealthConverged,
			want: map[string]ModuleStatus{
				"opxweb": {Assigned: true, State: HealthConverged},
				"forge":  {Assigned: true, State: HealthConverged},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			tc.build(g)
			st, err := g.folded().Status.Of("novox")
			if err != nil {
				t.Fatal(err)
			}
			if st.Health != tc.health {
				t.Errorf("health %s, want %s", st.Health, tc.health)
			}
			if len(st.Modules) != len(tc.want) {
				t.Errorf("modules %+v, want %+v", st.Modules, tc.want)
			}
			for m, want := range tc.want {
				if got := st.Modules[m]; got != want {
					t.Errorf("module %s: %+v, want %+v", m, got, want)
				}
			}
		})
	}
}

func TestStatusUnknownNode(t *testing.T) {
	s := New()
	if _, err := s.Status.Of("ghost"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("Of = %v, want ErrUnknownNode", err)
	}
	if _, err := s.Status.Converged("ghost"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("Converged = %v, want ErrUnknownNode", err)
	}
}

// TestStatusDeclaration: what the report door reads of a node's
// declarations: composed (when), pushed or not, the latest.
func TestStatusDeclaration(t *testing.T) {
	res := resources("m", 1, "A")
	g := newGen(t).composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 1).
		composed("novox", "novox/2", "B", nil, res).
		add("node-novox", "controller", "", events.DeclarationPushFailed{Node: "novox", Declaration: "novox/2", Error: "timeout"}).
		composed("novox", "novox/3", "C", nil, res).
		composed("novox", "novox/4", "D", nil, res).
		composed("g14", "g14/1", "A", nil, res).pushed("g14", "g14/1", "A", 1)
	s := g.folded().Status
	for _, tc := range []struct {
		node, decl string
		want       DeclarationFacts
	}{
		{"novox", "novox/1", DeclarationFacts{Composed: true, ComposedAt: t0.Add(time.Minute), Pushed: true}},
		{"novox", "novox/2", DeclarationFacts{Composed: true, ComposedAt: t0.Add(3 * time.Minute), Pushed: true}},
		{"novox", "novox/3", DeclarationFacts{Composed: true, ComposedAt: t0.Add(5 * time.Minute)}},
		{"novox", "novox/4", DeclarationFacts{Composed: true, ComposedAt: t0.Add(6 * time.Minute), Latest: true}},
		{"novox", "g14/1", DeclarationFacts{}},
		{"novox", "novox/999", DeclarationFacts{}},
		{"ghost", "ghost/1", DeclarationFacts{}},
	} {
		got := s.Declaration(tc.node, tc.decl)
		if tc.want.Composed {
			tc.want.Resources = []string{"m-0"}
		}
		declared := got.Declared
		got.Declared = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Declaration(%s, %s) = %+v, want %+v", tc.node, tc.decl, got, tc.want)
		}
		// What a removal may name: any resource the node's declarations had.
		if tc.want.Composed && (declared == nil || !declared("m-0") || declared("evil-resource")) {
			t.Errorf("Declaration(%s, %s): Declared does not say m-0 and only m-0", tc.node, tc.decl)
		}
	}
}
