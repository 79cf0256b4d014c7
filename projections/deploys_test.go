package projections

import (
	"strings"
	"testing"

	"meshplane/events"
)

// TestDeployBehind: a container replaced for a new image names the last
// deploy of its module before the apply and the build it deployed; a
// module with no deploy, another node's apply, or a position that is no
// apply, names nothing.
func TestDeployBehind(t *testing.T) {
	const a, b = "sha256:aaaa", "sha256:bbbb"
	mod := events.ModuleStream("m")
	rec := func(d string) events.ArtifactRecorded {
		return events.ArtifactRecorded{Module: "m", Name: "m/web", Digest: d, Upgrade: events.UpgradeManual}
	}
	dep := func(d, by string) events.ModuleDeployed {
		return events.ModuleDeployed{Module: "m", Builds: []events.Build{{Name: "m/web", Digest: d}}, By: by}
	}
	g := newGen(t).
		add(mod, "operator:jo", "r1", rec(a)).                // 1
		add(mod, "operator:jo", "r1", dep(a, "first-build")). // 2
		pass("novox", "novox/1", "d1", nil, 2, 0).            // 3, 4, 5
		add(mod, "operator:jo", "r2", rec(b)).                // 6
		add(mod, "operator:jo", "d2", dep(b, "operator")).    // 7
		pass("novox", "novox/2", "d2", nil, 2, 1).            // 8, 9, 10
		add(mod, "operator:jo", "r3", rec(a)).                // 11, recorded again, never deployed
		pass("g14", "g14/1", "d3", nil, 2, 1)                 // 12, 13, 14
	tl := NewTimeline()
	fold(t, g.reg, g.evs, tl)
	tests := []struct {
		name     string
		node     string
		position uint64
		resource string
		want     []string // each entry's summary contains this, in order
	}{
		{"after the operator's deploy", "novox", 10, "m-0", []string{"recorded at " + b, "deployed by mesh deploy"}},
		{"after the first build", "novox", 5, "m-0", []string{"recorded at " + a, "the first build deploys itself"}},
		{"a resource the declaration does not hold", "novox", 10, "other", nil},
		{"not an apply of that node", "g14", 10, "m-0", nil},
		{"a position that is no apply", "novox", 9, "m-0", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tl.DeployBehind(tt.node, tt.resource, tt.position)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("DeployBehind = %+v, want %d entries", got, len(tt.want))
			}
			for i, en := range got {
				if !strings.Contains(en.Summary, tt.want[i]) {
					t.Errorf("entry %d reads %q, want it to name %q", i, en.Summary, tt.want[i])
				}
			}
		})
	}
}
