package projections

import (
	"errors"
	"slices"
	"testing"

	"meshplane/events"
)

// TestRemovedNodeForgotten: a node.removed takes the node out of status,
// roster, holds and churn (its history stays in the timeline), and a node
// registered again under its name starts anew: not adopted, no modules,
// no holds, no episodes, health unknown.
func TestRemovedNodeForgotten(t *testing.T) {
	g := newGen(t)
	g.op("novox", events.NodeRegistered{Node: "novox"}).op("g14", events.NodeRegistered{Node: "g14"})
	g.op("novox", events.NodeAdopted{Node: "novox"}).assign("m", "novox")
	// Heavy passes in a row: a churn loop on novox, and a hold.
	for i, d := range []string{"A", "B", "A", "B", "A", "B"} {
		g.pass("novox", "novox/"+string(rune('1'+i)), d, []string{"m.mesh"}, 3, 3)
	}
	g.applied("novox", events.ApplyReported{Declaration: "novox/6", Sent: 3, Applied: 2, Unchanged: 2, Digest: "B",
		Held: []events.Held{{Name: "m-2", Module: "m", Reason: "found"}}})
	s := g.folded()
	if len(s.Churn.Episodes("novox")) == 0 {
		t.Fatal("the history made no churn episode: the test proves nothing")
	}
	if h, _ := s.Holds.Of("novox"); len(h) == 0 {
		t.Fatal("the history made no hold: the test proves nothing")
	}
	g.op("novox", events.ModuleReleased{Module: "m", Node: "novox"})
	g.op("novox", events.NodeRemoved{Node: "novox", Drained: []string{"m"}})
	s = g.folded()
	if got := s.Status.Nodes(); !slices.Equal(got, []string{"g14"}) {
		t.Errorf("status nodes %v, want [g14]", got)
	}
	if _, err := s.Status.Of("novox"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("status of a removed node: %v, want ErrUnknownNode", err)
	}
	if _, err := s.Roster.Current("novox"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("roster of a removed node: %v, want ErrUnknownNode", err)
	}
	if h, err := s.Holds.Of("novox"); len(h) > 0 {
		t.Errorf("holds of a removed node: %v, %v", h, err)
	}
	if eps := s.Churn.Episodes("novox"); len(eps) > 0 {
		t.Errorf("a removed node keeps %d churn episode(s)", len(eps))
	}
	if es := s.Timeline.Query(Filter{Node: "novox", Type: events.TypeNodeRemoved}); len(es) != 1 || es[0].Summary != "node novox removed, drained of m" {
		t.Errorf("the timeline's node.removed: %+v", es)
	}
	if es := s.Timeline.Query(Filter{Node: "novox"}); len(es) < 10 {
		t.Errorf("the timeline forgot the removed node's history: %d entries", len(es))
	}

	g.op("novox", events.NodeRegistered{Node: "novox"})
	s = g.folded()
	st, err := s.Status.Of("novox")
	if err != nil {
		t.Fatal(err)
	}
	if st.Adopted || len(st.Modules) > 0 || st.Health != HealthUnknown || st.Churn {
		t.Errorf("registered again, it inherits: %+v", st)
	}
}
