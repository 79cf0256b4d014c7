package projections

import (
	"slices"
	"testing"

	"meshplane/events"
)

func TestChurn(t *testing.T) {
	roster9 := []string{"a.internal", "b.internal"}
	roster10 := []string{"a.internal", "b.internal", "searxng.zurag.be"}
	tests := []struct {
		name       string
		build      func(g *gen)
		active     bool
		episodes   int
		loop, flip bool   // of the last episode
		decls      int    // distinct declarations in its evidence
		field      string // a replaced field its evidence counts
		failedRead string // a failed read its evidence carries
		roster     []string
	}{
		{
			name: "a heavy pass after an assign is not a loop",
			build: func(g *gen) {
				g.assign("m", "novox").pass("novox", "novox/1", "A", roster9, 10, 10)
			},
		},
		{
			name: "two heavy passes with no operator command in between are a loop",
			build: func(g *gen) {
				g.assign("m", "novox").
					pass("novox", "novox/1", "A", roster9, 10, 10).
					pass("novox", "novox/2", "B", roster9, 10, 10)
			},
			active: true, episodes: 1, loop: true, decls: 2, field: "hosts",
		},
		{
			name: "half of the resources is heavy",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 4, 2).pass("novox", "novox/2", "B", roster9, 4, 2)
			},
			active: true, episodes: 1, loop: true, decls: 2, field: "hosts",
		},
		{
			name: "less than half is quiet",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 4, 1).pass("novox", "novox/2", "B", roster9, 4, 1)
			},
		},
		{
			name: "a declaration of no resources is never heavy",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 0, 0).pass("novox", "novox/2", "B", roster9, 0, 0)
			},
		},
		{
			name: "an assign in between resets",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 10, 10).
					assign("other", "novox").
					pass("novox", "novox/2", "B", roster9, 10, 10)
			},
		},
		{
			name: "any operator event on the node's stream resets",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 10, 10).
					op("novox", events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"}).
					pass("novox", "novox/2", "B", roster9, 10, 10)
			},
		},
		{
			name: "a module definition of an assigned module resets",
			build: func(g *gen) {
				g.assign("m", "novox").pass("novox", "novox/1", "A", roster9, 10, 10).
					add(events.ModuleStream("m"), "operator:jo", "", events.ModuleDefined{Module: "m"}).
					pass("novox", "novox/2", "B", roster9, 10, 10)
			},
		},
		{
			name: "a module definition of a module on another node does not reset",
			build: func(g *gen) {
				g.assign("m", "novox").assign("x", "g14").pass("novox", "novox/1", "A", roster9, 10, 10).
					add(events.ModuleStream("x"), "operator:jo", "", events.ModuleDefined{Module: "x"}).
					pass("novox", "novox/2", "B", roster9, 10, 10)
			},
			active: true, episodes: 1, loop: true, decls: 2, field: "hosts",
		},
		{
			name: "an operator command on another node does not reset",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 10, 10).
					assign("x", "g14").
					pass("novox", "novox/2", "B", roster9, 10, 10)
			},
			active: true, episodes: 1, loop: true, decls: 2, field: "hosts",
		},
		{
			name: "a quiet pass in between resets",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 10, 10).
					pass("novox", "novox/1", "A", roster9, 10, 0).
					pass("novox", "novox/2", "B", roster9, 10, 10)
			},
		},
		{
			// Issue 12's simulator: seed 000's loop on a node like the seeds'
			// (110 containers among 330 resources) recreated every container
			// each pass, a third of the resources, and was never heavy.
			name: "every container recreated twice is a loop, however many directories and files",
			build: func(g *gen) {
				for _, d := range []string{"novox/1", "novox/2"} {
					g.mixedPass("novox", d, 3, 6, 3)
				}
			},
			active: true, episodes: 1, loop: true, decls: 2,
		},
		{
			name: "half of the containers is heavy",
			build: func(g *gen) {
				g.mixedPass("novox", "novox/1", 4, 8, 2).mixedPass("novox", "novox/2", 4, 8, 2)
			},
			active: true, episodes: 1, loop: true, decls: 2,
		},
		{
			name: "less than half of the containers, and of the resources, is quiet",
			build: func(g *gen) {
				g.mixedPass("novox", "novox/1", 4, 8, 1).mixedPass("novox", "novox/2", 4, 8, 1)
			},
		},
		{
			name: "a roll-out recreating every container is no loop: the definition resets",
			build: func(g *gen) {
				g.assign("m", "novox").mixedPass("novox", "novox/1", 3, 6, 3).
					add(events.ModuleStream("m"), "operator:jo", "", events.ModuleDefined{Module: "m"}).
					mixedPass("novox", "novox/2", 3, 6, 3)
			},
		},
		{
			name: "a flip A→B→A, with the names that came and went",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster10, 10, 0).
					pass("novox", "novox/2", "B", roster9, 10, 0).
					pass("novox", "novox/3", "A", roster10, 10, 0)
			},
			// the flip is detected at the third compose; its apply is one quiet pass
			active: true, episodes: 1, flip: true, decls: 3, roster: []string{"searxng.zurag.be"},
		},
		{
			name: "A→B, release, →A is no flip",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster10, 10, 0).
					pass("novox", "novox/2", "B", roster9, 10, 0).
					op("novox", events.ModuleReleased{Module: "x", Node: "novox"}).
					pass("novox", "novox/3", "A", roster10, 10, 0)
			},
		},
		{
			name: "a flip clears after two quiet passes with a steady digest",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster10, 10, 0).
					pass("novox", "novox/2", "B", roster9, 10, 0).
					pass("novox", "novox/3", "A", roster10, 10, 0).
					pass("novox", "novox/4", "A", roster10, 10, 0)
			},
			episodes: 1, flip: true, decls: 3, roster: []string{"searxng.zurag.be"},
		},
		{
			name: "a loop carries the failed reads of its episode",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster10, 10, 10).
					composeFailed("novox", "node g14", "store: not yet accepting connections").
					pass("novox", "novox/2", "B", roster9, 10, 10).
					composeFailed("novox", "node g14", "store: not yet accepting connections")
			},
			active: true, episodes: 1, loop: true, decls: 2, field: "hosts",
			failedRead: "store: not yet accepting connections",
		},
		{
			name: "one quiet pass does not clear a loop",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 10, 10).
					pass("novox", "novox/2", "A", roster9, 10, 10).
					pass("novox", "novox/3", "A", roster9, 10, 0)
			},
			active: true, episodes: 1, loop: true, decls: 2, field: "hosts",
		},
		{
			name: "a loop clears after two quiet passes and stays in history",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 10, 10).
					pass("novox", "novox/2", "A", roster9, 10, 10).
					pass("novox", "novox/3", "A", roster9, 10, 0).
					pass("novox", "novox/4", "A", roster9, 10, 0)
			},
			episodes: 1, loop: true, decls: 2, field: "hosts",
		},
		{
			name: "a heavy pass between quiet ones restarts the count",
			build: func(g *gen) {
				g.pass("novox", "novox/1", "A", roster9, 10, 10).
					pass("novox", "novox/2", "A", roster9, 10, 10).
					pass("novox", "novox/3", "A", roster9, 10, 0).
					pass("novox", "novox/4", "A", roster9, 10, 10).
					pass("novox", "novox/5", "A", roster9, 10, 0)
			},
			active: true, episodes: 1, loop: true, decls: 3, field: "hosts",
		},
		{
			// mesh up on a Docker node: the first apply found no image yet
			// (heavy: it created the rest), the next created the container.
			name: "a container created after its creation failed is a retry, not a loop",
			build: func(g *gen) {
				res := append(resources("m", 1, "A"),
					events.ResourceRef{Name: "/etc/m", Kind: "directory", Module: "m", Digest: "sha256:d"},
					events.ResourceRef{Name: "/etc/m/a", Kind: "file", Module: "m", Digest: "sha256:f"},
					events.ResourceRef{Name: "/var/lib/m", Kind: "directory", Module: "m", Digest: "sha256:v"})
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", len(res)).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 4, Applied: 3, Digest: "A",
						Created: []string{"/etc/m", "/etc/m/a", "/var/lib/m"}, Failed: []events.Failed{{Name: "m-0", Error: "image unavailable"}}}).
					applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 4, Applied: 4, Unchanged: 3, Digest: "A", Created: []string{"m-0"}})
			},
		},
		{
			name: "the same container created again after it ran is heavy",
			build: func(g *gen) {
				res := append(resources("m", 1, "A"),
					events.ResourceRef{Name: "/etc/m", Kind: "directory", Module: "m", Digest: "sha256:d"},
					events.ResourceRef{Name: "/etc/m/a", Kind: "file", Module: "m", Digest: "sha256:f"},
					events.ResourceRef{Name: "/var/lib/m", Kind: "directory", Module: "m", Digest: "sha256:v"})
				g.composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", len(res))
				for range 2 {
					g.applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 4, Applied: 4, Unchanged: 3, Digest: "A", Created: []string{"m-0"}})
				}
			},
			active: true, episodes: 1, loop: true, decls: 1,
		},
		{
			name: "a hand-written apply with no sent uses its declaration's size",
			build: func(g *gen) {
				for _, d := range []string{"novox/1", "novox/2"} {
					g.composed("novox", d, "A", roster9, resources("m", 2, "A")).
						raw("node-novox", events.TypeApplyReported, `{"declaration":"`+d+`","created":["m-0","m-1"]}`)
				}
			},
			active: true, episodes: 1, loop: true, decls: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			tc.build(g)
			c := g.folded().Churn
			if got := c.Active("novox"); got != tc.active {
				t.Errorf("Active = %v, want %v", got, tc.active)
			}
			eps := c.Episodes("novox")
			if len(eps) != tc.episodes {
				t.Fatalf("%d episodes, want %d: %+v", len(eps), tc.episodes, eps)
			}
			if _, open := c.Current("novox"); open != tc.active {
				t.Errorf("Current open = %v, want %v", open, tc.active)
			}
			if tc.episodes == 0 {
				return
			}
			e := eps[len(eps)-1]
			if e.Loop != tc.loop || e.Flip != tc.flip {
				t.Errorf("loop %v flip %v, want %v %v", e.Loop, e.Flip, tc.loop, tc.flip)
			}
			if e.Active() != tc.active {
				t.Errorf("episode active %v, want %v (end %v)", e.Active(), tc.active, e.End)
			}
			if !tc.active && (e.End == nil || e.End.Position <= e.Detected.Position) {
				t.Errorf("closed episode ends at %v, detected at %d", e.End, e.Detected.Position)
			}
			if e.Start.Position > e.Detected.Position || e.Start.Position == 0 {
				t.Errorf("starts at %d, detected at %d", e.Start.Position, e.Detected.Position)
			}
			if len(e.Evidence.Declarations) != tc.decls {
				t.Errorf("evidence declarations %+v, want %d", e.Evidence.Declarations, tc.decls)
			}
			if tc.field != "" && e.Evidence.Fields[tc.field] == 0 {
				t.Errorf("evidence fields %v lack %q", e.Evidence.Fields, tc.field)
			}
			if tc.failedRead != "" {
				if len(e.Evidence.FailedReads) != 1 || e.Evidence.FailedReads[0].Error != tc.failedRead ||
					e.Evidence.FailedReads[0].Count != 2 {
					t.Errorf("failed reads %+v, want %q twice", e.Evidence.FailedReads, tc.failedRead)
				}
			}
			if tc.roster != nil && !slices.Equal(e.Evidence.RosterChanged, tc.roster) {
				t.Errorf("roster changed %v, want %v", e.Evidence.RosterChanged, tc.roster)
			}
		})
	}
}

// TestChurnDetectedAtSecondPass checks the loop opens exactly at the second
// heavy pass and starts at the first.
func TestChurnDetectedAtSecondPass(t *testing.T) {
	g := newGen(t)
	g.pass("novox", "novox/1", "A", nil, 10, 10)
	first := g.evs[len(g.evs)-1].Position
	g.pass("novox", "novox/2", "B", nil, 10, 10)
	second := g.evs[len(g.evs)-1].Position
	c := NewChurn()
	fold(t, g.reg, g.evs[:len(g.evs)-1], c)
	if c.Active("novox") {
		t.Fatal("loop detected before the second heavy pass")
	}
	fold(t, g.reg, g.evs[len(g.evs)-1:], c)
	e, ok := c.Current("novox")
	if !ok {
		t.Fatal("no loop at the second heavy pass")
	}
	if e.Start.Position != first || e.Detected.Position != second || e.HeavyPasses != 2 {
		t.Errorf("start %d detected %d heavy %d, want %d %d 2", e.Start.Position, e.Detected.Position, e.HeavyPasses, first, second)
	}
}

func TestChurnUnattributed(t *testing.T) {
	g := newGen(t).add("elsewhere", "", "", events.ApplyReported{Declaration: "x/1"})
	p, err := g.reg.Decode(g.evs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, proj := range New().All() {
		err := proj.Fold(g.evs[0], p)
		if proj.Name() == "timeline" {
			if err != nil {
				t.Errorf("timeline refused an event with no node: %v", err)
			}
			continue
		}
		if proj.Name() == "roster" {
			continue // folds only composed declarations
		}
		if !errorsIs(err, ErrUnattributed) {
			t.Errorf("%s: fold = %v, want ErrUnattributed", proj.Name(), err)
		}
	}
}
