package controller_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events/memstore"
	"meshplane/projections"
)

// minuteClock is a clock a minute later at every call.
func minuteClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Minute)
		return t
	}
}

// TestAtAnswersAsTheMeshStood: At a position or a time, every read answers
// from the history up to it (node a registered, b not yet), says the moment,
// and takes no write; a moment outside the history is refused.
func TestAtAnswersAsTheMeshStood(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	k := projections.NewKeeper(projections.NewMemCheckpointStore(), projections.KeepPolicy{Every: 1, MinGap: 1}, nil)
	c, err := controller.New(controller.Config{Store: store, Clock: minuteClock(), Checkpoints: k})
	if err != nil {
		t.Fatal(err)
	}
	register := func(n string) uint64 {
		t.Helper()
		if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{n}}); err != nil {
			t.Fatal(err)
		}
		head, err := store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return head
	}
	register("a")
	if _, err := c.AdoptNode(ctx, api.NodeRequest{Operator: "x", Node: "a"}); err != nil {
		t.Fatal(err)
	}
	mid, _ := store.Head(ctx)
	register("b")
	head := register("c")
	if len(k.Positions()) == 0 {
		t.Error("the controller kept no checkpoint as it folded")
	}

	svc, err := c.At(ctx, api.At{Position: mid})
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.Status(ctx, api.StatusRequest{})
	if err != nil || len(st.Nodes) != 1 || st.Nodes[0].Node != "a" {
		t.Fatalf("status at %d: %+v, %v; want node a alone", mid, st, err)
	}
	if st.AsOf == nil || st.AsOf.Position != mid || st.AsOf.Time.IsZero() {
		t.Errorf("status at %d says it answers for %+v", mid, st.AsOf)
	}
	nl, err := svc.NodeList(ctx)
	if err != nil || len(nl.Nodes) != 1 || !nl.Nodes[0].Adopted || nl.AsOf == nil {
		t.Errorf("node list at %d: %+v, %v; want a, adopted", mid, nl, err)
	}
	var rej *commands.Rejection
	if _, err := svc.NodeShow(ctx, "b"); !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
		t.Errorf("node show b at %d: %v, want node-unknown", mid, err)
	}
	page, err := svc.Timeline(ctx, api.TimelineRequest{})
	if err != nil || len(page.Entries) == 0 || page.Entries[len(page.Entries)-1].Position > mid {
		t.Errorf("timeline at %d: %d entries, %v; want those up to %d", mid, len(page.Entries), err, mid)
	}
	if _, err := svc.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"d"}}); err == nil {
		t.Error("a write as of a past moment was taken")
	}
	// By time: the last event at or before it.
	byTime, err := c.At(ctx, api.At{Time: st.AsOf.Time.Add(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if st2, err := byTime.Status(ctx, api.StatusRequest{}); err != nil || st2.AsOf == nil || st2.AsOf.Position != mid {
		t.Errorf("status at %s: %+v, %v; want position %d", st.AsOf.Time.Add(30*time.Second), st2.AsOf, err, mid)
	}
	// The head answers as now.
	now, err := c.At(ctx, api.At{Position: head})
	if err != nil {
		t.Fatal(err)
	}
	if st3, err := now.Status(ctx, api.StatusRequest{}); err != nil || len(st3.Nodes) != 3 {
		t.Errorf("status at the head: %+v, %v", st3, err)
	}
	for _, at := range []api.At{
		{Position: head + 1},
		{Time: time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)}, // before the first event
		{Time: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},   // after the clock's now
	} {
		if _, err := c.At(ctx, at); !errors.As(err, &rej) || rej.Code != commands.CodeInvalid {
			t.Errorf("at %s: %v, want a rejection (invalid)", at, err)
		}
	}
}

// TestAtRosterHistoryFoldsWhole: the answers that need every declaration
// up to the moment come from a fold from 0, never ErrTrimmed.
func TestAtRosterHistoryFoldsWhole(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	c, err := controller.New(controller.Config{Store: store, Clock: minuteClock()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	svc, err := c.At(ctx, api.At{Position: 1})
	if err != nil {
		t.Fatal(err)
	}
	// No declaration composed yet: the node has no roster (not a trimmed
	// history, which a fold from a checkpoint would answer).
	var rej *commands.Rejection
	if _, err := svc.RosterHistory(ctx, "a"); !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
		t.Errorf("roster history at 1: %v, want node-unknown", err)
	}
}
