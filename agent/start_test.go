package agent_test

import (
	"testing"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/events"
)

// TestStoppedContainerIsStartedAndReported: a managed container stopped
// behind the agent's back (an operator, a crash with no restart) is started
// in place, reported as updated ("running"), and not recreated; a second
// pass is a no-op.
func TestStoppedContainerIsStartedAndReported(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/1", forge("/srv/forge")...)
	fx.apply(t, d)
	if err := fx.rt.StopContainer("web"); err != nil {
		t.Fatal(err)
	}
	o := fx.apply(t, d).Outcome
	want := []events.Replaced{{Name: "web", Fields: []string{"running"}}}
	if !equalReplaced(o.Updated, want) || o.Changes() != 0 || len(o.Failed) != 0 {
		t.Fatalf("after a stop: updated %+v, changes %d, failed %+v; want updated %+v and nothing else", o.Updated, o.Changes(), o.Failed, want)
	}
	if !fx.rt.Running("web") || fx.rt.Creates("web") != 1 {
		t.Fatalf("web running %v after %d creates; want running, created once", fx.rt.Running("web"), fx.rt.Creates("web"))
	}
	if o := fx.apply(t, d).Outcome; len(o.Updated) != 0 || o.Unchanged != 3 {
		t.Fatalf("pass after the start: %+v, want 3 unchanged", o)
	}
}

// TestStartFailureIsReported: a start that fails is a failed resource.
func TestStartFailureIsReported(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/1", forge("/srv/forge")...)
	fx.apply(t, d)
	if err := fx.rt.StopContainer("web"); err != nil {
		t.Fatal(err)
	}
	fx.rt.FailNext(simruntime.OpStart, 1, nil)
	o := fx.apply(t, d).Outcome
	if len(o.Failed) != 1 || o.Failed[0].Name != "web" {
		t.Fatalf("failed = %+v, want web", o.Failed)
	}
	var _ agent.Runtime = fx.rt
}
