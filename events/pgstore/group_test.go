package pgstore

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/internal/groupcommit"
	"meshplane/events/pgstore/pgtest"
)

func TestLayers(t *testing.T) {
	cases := []struct {
		streams []string
		want    [][]int
	}{
		{[]string{"a"}, [][]int{{0}}},
		{[]string{"a", "b", "c"}, [][]int{{0, 1, 2}}},
		{[]string{"a", "a", "a"}, [][]int{{0}, {1}, {2}}},
		{[]string{"a", "b", "a", "c", "b", "a"}, [][]int{{0, 1, 3}, {2, 4}, {5}}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.streams), func(t *testing.T) {
			var group []*groupcommit.Request
			for _, s := range tc.streams {
				group = append(group, &groupcommit.Request{Stream: s})
			}
			if got := layers(group); !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("layers = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGroupDecidesEachRequest commits one group holding several requests to
// the same streams (so several layers, of several requests each), some of
// them refused by their expected version, and checks each request's answer
// against a one-at-a-time reading of the queue, and that the log is dense.
func TestGroupDecidesEachRequest(t *testing.T) {
	pgtest.Need(t, srv)
	s := openURL(t, srv.Database(t))
	type req struct {
		stream   string
		expected events.ExpectedVersion
		n        int
		version  uint64 // the first event's version; 0: refused
	}
	reqs := []req{
		{"node-a", events.NoStream, 2, 1},
		{"node-b", events.Exactly(3), 1, 0}, // node-b is new
		{"node-a", events.Exactly(2), 1, 3},
		{"node-c", events.Any, 3, 1},
		{"node-a", events.Exactly(2), 1, 0}, // the request before took version 3
		{"node-b", events.NoStream, 1, 1},
		{"node-a", events.Any, 2, 4},
	}
	var group []*groupcommit.Request
	for _, r := range reqs {
		evs := make([]events.Event, r.n)
		for i := range evs {
			evs[i] = event("test.grouped")
		}
		prepared, err := events.Prepare(r.stream, evs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, &groupcommit.Request{Stream: r.stream, Expected: r.expected, Events: prepared})
	}
	if !pipelinable(group) {
		t.Fatal("the group would not go by commitPipelined")
	}
	results, err := s.commit(group)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	var positions []uint64
	for i, r := range reqs {
		res := results[i]
		if r.version == 0 {
			if !errors.Is(res.Err, events.ErrWrongExpectedVersion) {
				t.Errorf("request %d (%s, %s): err %v, want a version error", i, r.stream, r.expected, res.Err)
			}
			continue
		}
		if res.Err != nil {
			t.Errorf("request %d (%s, %s): %v", i, r.stream, r.expected, res.Err)
			continue
		}
		for j, e := range res.Events {
			if e.Version != r.version+uint64(j) {
				t.Errorf("request %d event %d: version %d, want %d", i, j, e.Version, r.version+uint64(j))
			}
			if j > 0 && e.Position != res.Events[j-1].Position+1 {
				t.Errorf("request %d event %d: position %d after %d", i, j, e.Position, res.Events[j-1].Position)
			}
			positions = append(positions, e.Position)
		}
	}
	slices.Sort(positions)
	for i, p := range positions {
		if p != uint64(i+1) {
			t.Fatalf("positions %v: not dense from 1", positions)
		}
	}
	all, err := s.ReadAll(testCtx(t, time.Minute), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(positions) {
		t.Fatalf("stored %d events, answered %d", len(all), len(positions))
	}
}
