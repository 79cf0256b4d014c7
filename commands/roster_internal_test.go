package commands

import (
	"fmt"
	"testing"

	"meshplane/declaration"
	"meshplane/events"
)

// TestCompositionRosterDigestIsTheEventsOne: the roster digest a
// composition's declaration carries is events.RosterDigest of the routes
// it records, which RosterRevision compares with the recorded roster's
// digest instead of hashing the routes again.
func TestCompositionRosterDigestIsTheEventsOne(t *testing.T) {
	for _, n := range []int{0, 1, 3, 500} {
		routes := make([]declaration.Route, n)
		for i := range routes {
			routes[i] = declaration.Route{Name: fmt.Sprintf("n%04d.z", i), Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250), Node: fmt.Sprintf("node-%d", i%7)}
		}
		r := newRoster(routes)
		if got, want := r.digest, events.RosterDigest(r.mesh); got != want {
			t.Errorf("%d routes: the composition's roster digest %s, the events' %s", n, got, want)
		}
		if got, want := declaration.RosterDigest(routes), r.digest; got != want {
			t.Errorf("%d routes: declaration.RosterDigest %s, the composition's %s", n, got, want)
		}
	}
}
