package commands_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events"
)

// TestLivenessTransitions: went-silent and came-back are appended once per
// transition, decided from the node's stream: asked twice, the second
// appends nothing; came-back of a node that is not silent appends nothing;
// an unregistered node is refused.
func TestLivenessTransitions(t *testing.T) {
	ctx := context.Background()
	h, store := doorSetup(t)
	seen := doorNow.Add(-45 * time.Second)
	if evs, err := h.RecordCameBack(ctx, "n1", doorNow); err != nil || len(evs) != 0 {
		t.Fatalf("came-back of a node never silent: %v, %v; want nothing", evs, err)
	}
	for i := range 2 {
		evs, err := h.RecordWentSilent(ctx, commands.WentSilent{Node: "n1", LastSeen: seen, Bound: 30 * time.Second})
		if err != nil || len(evs) != 1-i {
			t.Fatalf("went-silent #%d: %v, %v; want %d event(s)", i+1, evs, err, 1-i)
		}
	}
	back := doorNow.Add(4 * time.Minute)
	evs, err := h.RecordCameBack(ctx, "n1", back)
	if err != nil || len(evs) != 1 {
		t.Fatalf("came-back: %v, %v", evs, err)
	}
	p, err := events.NewRegistry().Decode(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := events.NodeCameBack{Node: "n1", LastSeen: back.UTC(), SilentFor: "4m45s"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("came-back payload %+v, want %+v", p, want)
	}
	if evs, err := h.RecordCameBack(ctx, "n1", back); err != nil || len(evs) != 0 {
		t.Fatalf("came-back twice: %v, %v", evs, err)
	}
	if got, want := streamTypes(t, store, "node-n1"), []string{events.TypeNodeRegistered, events.TypeNodeWentSilent, events.TypeNodeCameBack}; !reflect.DeepEqual(got, want) {
		t.Errorf("node-n1 holds %v, want %v", got, want)
	}
	if _, err := h.RecordWentSilent(ctx, commands.WentSilent{Node: "ghost", Bound: time.Second}); !errors.Is(err, commands.ErrRejected) {
		t.Fatalf("went-silent of an unregistered node: %v", err)
	}
}
