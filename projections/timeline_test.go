package projections

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/events"
)

// timelineHistory: positions 1..9.
//
//	1 route-proxy assigned to novox            (operator, novox)
//	2 composed novox/1                         (c-novox/1)
//	3 pushed novox/1                           (c-novox/1)
//	4 applied novox/1: created proxy, replaced web (mounts), held ca
//	5 composed g14/1                           (c-g14/1)
//	6 applied g14/1: created web
//	7 composed novox/2                         (c-novox/2)
//	8 applied novox/2: replaced web (image)
//	9 an event of a type this build does not know (left to the runner)
func timelineHistory(t *testing.T) *gen {
	res := []events.ResourceRef{
		{Name: "ca", Kind: "container", Module: "route-proxy", Digest: "1"},
		{Name: "proxy", Kind: "container", Module: "route-proxy", Digest: "2"},
		{Name: "web", Kind: "container", Module: "forge", Digest: "3"},
	}
	return newGen(t).assign("route-proxy", "novox").
		composed("novox", "novox/1", "sha256:n1", []string{"a"}, res).
		pushed("novox", "novox/1", "sha256:n1", 3).
		applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 3, Applied: 2,
			Created:  []string{"proxy"},
			Replaced: []events.Replaced{{Name: "web", Fields: []string{"mounts"}}},
			Held:     []events.Held{{Name: "ca", Module: "route-proxy", Reason: "not run until route-proxy is taken"}}}).
		composed("g14", "g14/1", "sha256:g1", []string{"a"}, res[2:]).
		applied("g14", events.ApplyReported{Declaration: "g14/1", Sent: 1, Applied: 1, Created: []string{"web"}}).
		composed("novox", "novox/2", "sha256:n2", []string{"a"}, res).
		applied("novox", events.ApplyReported{Declaration: "novox/2", Sent: 3, Applied: 2, Unchanged: 1,
			Replaced: []events.Replaced{{Name: "web", Fields: []string{"image"}}},
			Held:     []events.Held{{Name: "ca", Module: "route-proxy", Reason: "not run until route-proxy is taken"}}})
}

func TestTimelineQuery(t *testing.T) {
	tl := timelineHistory(t).folded().Timeline
	at := func(pos int) time.Time { return t0.Add(time.Duration(pos) * time.Minute) }
	tests := []struct {
		name string
		f    Filter
		want []uint64
	}{
		{"everything", Filter{}, []uint64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"by node", Filter{Node: "g14"}, []uint64{5, 6}},
		{"by type", Filter{Type: events.TypeApplyReported}, []uint64{4, 6, 8}},
		{"by correlation", Filter{Correlation: "c-novox/1"}, []uint64{2, 3, 4}},
		{"by resource", Filter{Resource: "web"}, []uint64{4, 6, 8}},
		{"by resource on a node", Filter{Node: "novox", Resource: "web"}, []uint64{4, 8}},
		{"by held resource", Filter{Resource: "ca"}, []uint64{4, 8}},
		{"by module", Filter{Module: "route-proxy"}, []uint64{1, 2, 3, 4, 7, 8}},
		{"by module, forge", Filter{Module: "forge"}, []uint64{2, 3, 4, 5, 6, 7, 8}},
		{"time range is [from, to)", Filter{From: at(3), To: at(6)}, []uint64{3, 4, 5}},
		{"limit keeps the latest", Filter{Node: "novox", Limit: 2}, []uint64{7, 8}},
		{"nothing matches", Filter{Node: "ghost"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []uint64
			for _, e := range tl.Query(tc.f) {
				got = append(got, e.Position)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("positions %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTimelineEntries(t *testing.T) {
	tl := timelineHistory(t).folded().Timeline
	es := tl.Query(Filter{Correlation: "c-novox/1", Type: events.TypeApplyReported})
	if len(es) != 1 {
		t.Fatalf("%d entries", len(es))
	}
	e := es[0]
	want := "applied 2 resource(s), 1 held for untaken modules (route-proxy: 1); created proxy; replaced web (mounts)"
	if e.Summary != want {
		t.Errorf("summary %q, want %q", e.Summary, want)
	}
	if e.Node != "novox" || e.Declaration != "novox/1" || e.Digest != "sha256:n1" || e.Actor != "agent:novox" {
		t.Errorf("entry %+v", e)
	}
	if !slices.Equal(e.Resources, []string{"ca", "proxy", "web"}) || !slices.Equal(e.Modules, []string{"forge", "route-proxy"}) {
		t.Errorf("resources %v modules %v", e.Resources, e.Modules)
	}
	if !e.Heavy {
		t.Error("2 of 3 changed is not heavy")
	}
	composed := tl.Query(Filter{Type: events.TypeDeclarationComposed, Limit: 1})[0]
	if !strings.Contains(composed.Summary, "3 resource(s)") || composed.Digest != "sha256:n2" {
		t.Errorf("composed entry %+v", composed)
	}
}

func TestTimelineWhy(t *testing.T) {
	tl := timelineHistory(t).folded().Timeline
	got, err := tl.Why("novox", "web")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pos    uint64
		action string
		field  string
		decl   string
	}{{4, ActionReplaced, "mounts", "novox/1"}, {8, ActionReplaced, "image", "novox/2"}}
	if len(got) != len(want) {
		t.Fatalf("why: %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Entry.Position != w.pos || g.Action != w.action || !slices.Equal(g.Fields, []string{w.field}) ||
			g.Entry.Declaration != w.decl || g.Entry.Correlation != "c-"+w.decl {
			t.Errorf("touch %d: %+v, want %+v", i, g, w)
		}
	}
	held, err := tl.Why("novox", "ca")
	if err != nil || len(held) != 2 || held[0].Action != ActionHeld || held[0].Reason == "" {
		t.Errorf("why ca: %+v, %v", held, err)
	}
	if _, err := tl.Why("ghost", "web"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("why on an unknown node: %v", err)
	}
}

// Rule 7: a loop is shown in the timeline, at the apply where it was
// detected and the one where it cleared.
func TestTimelineMarksChurn(t *testing.T) {
	res := []events.ResourceRef{{Name: "a"}, {Name: "b"}}
	heavy := events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 2, Created: []string{"a", "b"}}
	quiet := events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 2, Unchanged: 2}
	set := newGen(t).
		composed("novox", "novox/1", "sha256:aa", nil, res).
		applied("novox", heavy).applied("novox", heavy).
		applied("novox", quiet).applied("novox", quiet).
		folded()
	var marks []string
	for _, en := range set.Timeline.Query(Filter{Node: "novox", Type: events.TypeApplyReported}) {
		marks = append(marks, en.Churn)
	}
	want := []string{"", "churn loop detected (episode: 2 heavy passes, 0 flips)", "", "churn loop cleared after 4 passes"}
	if !slices.Equal(marks, want) {
		t.Fatalf("churn marks %q, want %q", marks, want)
	}
}

// TestTimelineHeavyIsTheChurnRule: the timeline marks an apply heavy by
// rule 7's one function (events.Heavy), as the churn detector counts it:
// every container recreated on a node whose files outnumber them is heavy,
// a retry after a failed creation is not, and a snapshot of the timeline's
// fold state keeps what the retry exception needs.
func TestTimelineHeavyIsTheChurnRule(t *testing.T) {
	retry := func(g *gen) {
		res := append(resources("m", 1, "A"),
			events.ResourceRef{Name: "/etc/m", Kind: "directory", Module: "m", Digest: "sha256:d"},
			events.ResourceRef{Name: "/etc/m/a", Kind: "file", Module: "m", Digest: "sha256:f"},
			events.ResourceRef{Name: "/var/lib/m", Kind: "directory", Module: "m", Digest: "sha256:v"})
		g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", len(res)).
			applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 4, Applied: 3, Digest: "A",
				Created: []string{"/etc/m", "/etc/m/a", "/var/lib/m"}, Failed: []events.Failed{{Name: "m-0", Error: "image unavailable"}}}).
			applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 4, Applied: 4, Unchanged: 3, Digest: "A", Created: []string{"m-0"}}).
			applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 4, Applied: 4, Unchanged: 3, Digest: "A", Created: []string{"m-0"}})
	}
	tests := []struct {
		name  string
		build func(g *gen)
		heavy []bool // of the node's applies, in order
	}{
		{"every container of a third of the resources", func(g *gen) {
			g.mixedPass("novox", "novox/1", 3, 6, 3).mixedPass("novox", "novox/2", 3, 6, 1)
		}, []bool{true, false}},
		{"a retry after a failed creation, then the container created again", retry, []bool{true, false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			tc.build(g)
			set := g.folded()
			got := func(tl *Timeline) []bool {
				var out []bool
				for _, en := range tl.Query(Filter{Node: "novox", Type: events.TypeApplyReported}) {
					out = append(out, en.Heavy)
				}
				return out
			}
			if h := got(set.Timeline); !slices.Equal(h, tc.heavy) {
				t.Errorf("heavy %v, want %v", h, tc.heavy)
			}
			// The churn detector agrees: it opened a loop exactly where two
			// heavy applies came in a row.
			loop := false
			for i := 1; i < len(tc.heavy); i++ {
				loop = loop || tc.heavy[i-1] && tc.heavy[i]
			}
			if eps := set.Churn.Episodes("novox"); (len(eps) > 0) != loop {
				t.Errorf("churn episodes %+v, want a loop: %v", eps, loop)
			}
			// Folded on from a snapshot of the fold state taken before the
			// last apply, the timeline weighs it alike.
			last := len(g.evs) - 1
			before := New()
			fold(t, g.reg, g.evs[:last], before.All()...)
			st := &snapState{}
			s := before.Timeline.save(&tables{st: st, strs: map[*string]int{}, res: map[*events.ResourceRef]int{}})
			after := NewTimeline()
			after.load(s, st)
			fold(t, g.reg, g.evs[last:], after)
			if h := got(after); len(h) != 1 || h[0] != tc.heavy[len(tc.heavy)-1] {
				t.Errorf("after a snapshot, the last apply's heavy %v, want %v", h, tc.heavy[len(tc.heavy)-1])
			}
		})
	}
}

// TestTimelineRefusedAndThrottled: a refused report and the rate limit's
// summary read as sentences, under their node.
func TestTimelineRefusedAndThrottled(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tl := newGen(t).
		add("node-n1", "controller", "", events.ReportRefused{Node: "n1", Reason: events.RefusedCounts,
			Detail: "unchanged: -1 is below zero", Digest: "sha256:ab12", Size: 52, Declaration: "n1/3"}).
		add("node-n1", "controller", "", events.ReportThrottled{Node: "n1", Deferred: 240, From: from, To: from.Add(time.Minute), Rate: 1, Burst: 64}).
		folded().Timeline
	es := tl.Query(Filter{Node: "n1"})
	if len(es) != 2 {
		t.Fatalf("%d entries for n1, want 2: %+v", len(es), es)
	}
	if want := "report from n1 refused (bad-counts): unchanged: -1 is below zero; 52 bytes, sha256:ab12"; es[0].Summary != want || es[0].Declaration != "n1/3" {
		t.Errorf("refused: %+v, want summary %q", es[0], want)
	}
	if want := "n1 sent reports faster than its limit (1 a second, bursts of 64): 240 deferred from 10:00:00 to 10:01:00, each recorded in its turn"; es[1].Summary != want {
		t.Errorf("throttled: %q, want %q", es[1].Summary, want)
	}
}

// TestTimelineJoins: the access events read as sentences, under their
// node, never with a token's secret hash.
func TestTimelineJoins(t *testing.T) {
	exp := time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)
	sha := strings.Repeat("ab", 32)
	tl := newGen(t).
		add("node-n4", "operator:ana", "", events.NodeJoinTokenIssued{Node: "n4", TokenID: sha[:16], SecretSHA256: sha, ExpiresAt: exp, By: "operator:ana"}).
		add("node-n4", "agent:n4", "", events.NodeJoined{Node: "n4", TokenID: sha[:16], PublicKey: "UKEY", From: "10.0.0.4:5000", AgentVersion: "dev"}).
		add("node-n4", "operator:ana", "", events.NodeCredentialsIssued{Node: "n4", PublicKey: "UKEY2", By: "operator:ana"}).
		add("node-n4", "operator:ana", "", events.NodeCredentialsRevoked{Node: "n4", PublicKeys: []string{"UKEY", "UKEY2"}, By: "operator:ana"}).
		folded().Timeline
	es := tl.Query(Filter{Node: "n4"})
	want := []string{
		"join token abababababababab issued for n4, good until 2026-12-01T10:15:00Z",
		"n4 joined with token abababababababab from 10.0.0.4:5000: bus user UKEY (agent dev)",
		"bus credentials minted for n4: user UKEY2",
		"2 bus user(s) of n4 revoked: UKEY, UKEY2",
	}
	if len(es) != len(want) {
		t.Fatalf("%d entries for n4, want %d: %+v", len(es), len(want), es)
	}
	for i, w := range want {
		if es[i].Summary != w || strings.Contains(es[i].Summary, sha) {
			t.Errorf("entry %d: %q, want %q", i, es[i].Summary, w)
		}
	}
}

// TestTimelineFailedRollouts: a failed roll-out reads as what the mesh did
// about it, two different outcomes and the stop of a revert loop, under
// its node and its module.
func TestTimelineFailedRollouts(t *testing.T) {
	web := []events.RolloutFailure{{Module: "forge", Container: "web", Why: "exited with code 1: cat: /no/such/file"}}
	tl := newGen(t).
		add("node-n1", "agent:n1", "", events.RolloutFailed{Node: "n1", Module: "forge", Declaration: "n1/3", Containers: web, Action: events.RolloutGaveUp}).
		add("node-n1", "agent:n1", "", events.RolloutFailed{Node: "n1", Module: "forge", Declaration: "n1/4", Containers: web, Action: events.RolloutRevert, RevertTo: 41}).
		add("node-n1", "agent:n1", "", events.RolloutFailed{Node: "n1", Module: "forge", Declaration: "n1/5", Containers: web, Action: events.RolloutStopped}).
		folded().Timeline
	es := tl.Query(Filter{Module: "forge"})
	if len(es) != 3 {
		t.Fatalf("%d entries for forge, want 3: %+v", len(es), es)
	}
	for i, want := range []string{
		"roll-out of forge on n1 failed (web: exited with code 1: cat: /no/such/file): gave up, nothing reverted (on_failure: pause)",
		"roll-out of forge on n1 failed (web: exited with code 1: cat: /no/such/file): reverting the module to position 41 (on_failure: revert)",
		"roll-out of forge on n1 failed (web: exited with code 1: cat: /no/such/file): it was the revert of a failed roll-out: stopped there, nothing reverted again",
	} {
		if es[i].Summary != want || es[i].Node != "n1" {
			t.Errorf("entry %d: %q on %q, want %q on n1", i, es[i].Summary, es[i].Node, want)
		}
	}
}
