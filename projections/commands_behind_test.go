package projections

import (
	"testing"

	"meshplane/events"
)

// TestCommandsBehind: an apply names the commands that changed its
// declaration since the one the node applied before: the module's
// definitions and deploys, the module's assign on the node, the node's
// settings; not another module's, another node's, or those before the
// earlier compose. The first apply names the latest of each.
func TestCommandsBehind(t *testing.T) {
	mod := events.ModuleStream("m")
	def := events.ModuleDefined{Module: "m"}
	g := newGen(t).
		add(mod, "operator:jo", "", def).                                                                // 1
		add(mod, "operator:ana", "", def).                                                               // 2
		assign("m", "novox").                                                                            // 3
		pass("novox", "novox/1", "d1", nil, 2, 0).                                                       // 4, 5, 6
		add(mod, "operator:ana", "", def).                                                               // 7
		op("novox", events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "3001"}).             // 8
		op("g14", events.NodeSettingSet{Node: "g14", Key: "port.store", Value: "3001"}).                 // 9
		add(events.ModuleStream("other"), "operator:jo", "", events.ModuleDefined{Module: "other"}).     // 10
		assign("m", "g14").                                                                              // 11
		add(mod, "operator:jo", "", events.ModuleDeployed{Module: "m", By: "operator"}).                 // 12
		pass("novox", "novox/2", "d2", nil, 2, 1).                                                       // 13, 14, 15
		applied("novox", events.ApplyReported{Declaration: "novox/2", Sent: 2, Applied: 2, Unchanged: 1, // 16
							Replaced: []events.Replaced{{Name: "m-0", Fields: []string{"image"}}}}).
		add(mod, "operator:jo", "", def) // 17, not applied yet
	tl := NewTimeline()
	fold(t, g.reg, g.evs, tl)
	tests := []struct {
		name     string
		node     string
		position uint64
		resource string
		want     []uint64
	}{
		{"first apply: the latest of each", "novox", 6, "m-0", []uint64{2, 3}},
		{"since the earlier compose", "novox", 15, "m-0", []uint64{7, 8, 12}},
		{"a second apply of the same declaration", "novox", 16, "m-0", []uint64{7, 8, 12}},
		{"a resource the declaration does not hold: the node's settings", "novox", 15, "ghost", []uint64{8}},
		{"not an apply", "novox", 14, "m-0", nil},
		{"another node's position", "g14", 15, "m-0", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tl.CommandsBehind(tt.node, tt.resource, tt.position)
			if err != nil {
				t.Fatal(err)
			}
			var pos []uint64
			for _, en := range got {
				pos = append(pos, en.Position)
				if en.Actor == "" || en.At.IsZero() {
					t.Errorf("entry #%d has no actor or time: %+v", en.Position, en)
				}
			}
			if len(pos) != len(tt.want) {
				t.Fatalf("CommandsBehind = %v, want %v", pos, tt.want)
			}
			for i := range pos {
				if pos[i] != tt.want[i] {
					t.Fatalf("CommandsBehind = %v, want %v", pos, tt.want)
				}
			}
		})
	}
}
