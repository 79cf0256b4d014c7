package commands_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

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

// TestWentSilentNeverHeard: a node is silent only after it was heard. A
// node joined whose agent has not started yet (nothing on its stream from
// it, no heartbeat named) is not silent however long ago it joined; one
// whose heartbeat the controller names, or whose stream holds a report
// from it (a controller started since, which heard nothing yet), is; a
// node removed and registered again is a new machine, never heard.
func TestWentSilentNeverHeard(t *testing.T) {
	ctx := context.Background()
	seen := doorNow.Add(-45 * time.Second)
	reg := events.NewRegistry()
	said := func(p events.Payload) func(*testing.T, *commands.Handler, events.Store) {
		return func(t *testing.T, _ *commands.Handler, store events.Store) {
			ev, err := reg.New("node-n1", p, events.Meta{ID: uuid.New(), At: doorNow, Actor: "controller"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Append(ctx, "node-n1", events.Any, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		before   func(*testing.T, *commands.Handler, events.Store)
		lastSeen time.Time
		silent   bool
	}{
		{name: "joined, never heard", silent: false},
		{name: "joined, a heartbeat heard", lastSeen: seen, silent: true},
		{name: "an apply recorded", before: said(events.ApplyReported{Node: "n1", Declaration: "n1/3"}), silent: true},
		{name: "a report refused", before: said(events.ReportRefused{Node: "n1", Reason: events.RefusedMalformed}), silent: true},
		{name: "silent and back before", before: func(t *testing.T, h *commands.Handler, s events.Store) {
			said(events.NodeWentSilent{Node: "n1", Bound: "30s"})(t, h, s)
			said(events.NodeCameBack{Node: "n1", LastSeen: seen, SilentFor: "1m"})(t, h, s)
		}, silent: true},
		{name: "silent once, never heard", before: said(events.NodeWentSilent{Node: "n1", Bound: "30s"}), silent: false},
		{name: "heard, removed, registered again", before: func(t *testing.T, h *commands.Handler, s events.Store) {
			said(events.ApplyReported{Node: "n1", Declaration: "n1/3"})(t, h, s)
			must(t, h, commands.RemoveNode{Node: "n1"}, commands.RegisterNode{Node: "n1"})
		}, silent: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, store := doorSetup(t)
			if tc.before != nil {
				tc.before(t, h, store)
			}
			before := len(streamTypes(t, store, "node-n1"))
			evs, err := h.RecordWentSilent(ctx, commands.WentSilent{Node: "n1", LastSeen: tc.lastSeen, Bound: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			types := streamTypes(t, store, "node-n1")
			switch {
			case tc.silent && (len(evs) != 1 || types[len(types)-1] != events.TypeNodeWentSilent):
				t.Errorf("went-silent appended %d event(s), stream %v: want node.went-silent", len(evs), types)
			case !tc.silent && (len(evs) != 0 || len(types) != before):
				t.Errorf("went-silent appended %d event(s), stream %v: want nothing, never heard", len(evs), types)
			}
		})
	}
}
