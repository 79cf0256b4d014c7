package controller_test

import (
	"context"
	"fmt"
	"testing"

	"meshplane/controller"
	"meshplane/projections"
)

// RebuildLocal rebuilds every projection, or those named, twice from a
// store a simulated mesh filled, the two byte-identical, up to the head,
// with progress from 0 to the head.
func TestRebuildLocal(t *testing.T) {
	ctx := context.Background()
	store := generated(t)
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{nil, {"roster", "status"}, {"timeline"}} {
		t.Run(fmt.Sprint(names), func(t *testing.T) {
			c, err := controller.New(controller.Config{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			var calls [][2]uint64
			res, err := c.RebuildLocal(ctx, names, func(done, h uint64) { calls = append(calls, [2]uint64{done, h}) })
			if err != nil {
				t.Fatal(err)
			}
			if res.Runner.Position() != head || c.Runner().Position() != head || res.Bytes == 0 {
				t.Errorf("rebuilt to %d (the controller's runner to %d), %d bytes; want the head %d", res.Runner.Position(), c.Runner().Position(), res.Bytes, head)
			}
			if len(calls) < 2 || calls[0] != [2]uint64{0, head} || calls[len(calls)-1] != [2]uint64{head, head} {
				t.Errorf("progress %v, want from 0 to %d", calls, head)
			}
			if b, err := projections.Snapshot(res.Set.All()...); err != nil || len(b) == 0 {
				t.Errorf("the rebuilt set, saved: %d bytes, %v", len(b), err)
			}
		})
	}
}
