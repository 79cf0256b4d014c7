package commands_test

import (
	"fmt"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
)

// BenchmarkComposedBytesRosterChange reports the stored bytes of one
// node's declaration.composed after a roster change, in a mesh of 200
// routed names: with the names in full (before roster revisions) and
// naming the revision (now). A roster change stores one such event per
// node, and one roster.changed for the mesh.
func BenchmarkComposedBytesRosterChange(b *testing.B) {
	reg := events.NewRegistry()
	routes := make([]declaration.Route, 200)
	for i := range routes {
		routes[i] = declaration.Route{Name: fmt.Sprintf("mod-%03d.mesh.example", i), Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Node: fmt.Sprintf("node-%04d", i*5)}
	}
	res := []declaration.Resource{{Name: "c0", Kind: declaration.KindContainer, Module: "m", Digest: "sha256:" + fmt.Sprintf("%064d", 1)}}
	for _, tc := range []struct {
		name string
		rev  uint64
	}{{"names", 0}, {"revision", 7}} {
		b.Run(tc.name, func(b *testing.B) {
			c := commands.Composition{Declaration: declaration.Declaration{Node: "node-0001", ID: "node-0001/9", Digest: "sha256:" + fmt.Sprintf("%064d", 2),
				Resources: res, Roster: routes, RosterRevision: tc.rev}, Previous: map[string]string{"c0": res[0].Digest}}
			var n int
			for b.Loop() {
				ev, err := reg.New("node-node-0001", c.Composed(), events.Meta{ID: events.NewID(), At: time.Unix(0, 0)})
				if err != nil {
					b.Fatal(err)
				}
				n = len(ev.Data)
			}
			b.ReportMetric(float64(n), "bytes/node")
		})
	}
}
