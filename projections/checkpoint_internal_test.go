package projections

import (
	"testing"
	"time"
)

// TestKeeperSpacesLargeCheckpoints: after a checkpoint over a MiB, the
// next is due only once one event for each BytesPerEvent bytes beyond
// the MiB has passed, whatever Every and Interval say; a small one
// leaves the policy as it was; and a Keeper started on a store holding a
// large checkpoint spaces the next from it.
func TestKeeperSpacesLargeCheckpoints(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	policy := KeepPolicy{Every: 10, MinGap: 1, Interval: time.Minute}
	large := make([]byte, sizeFloor+32*1000) // 1,000 events' worth beyond the floor, less the frame

	store := NewMemCheckpointStore()
	k := NewKeeper(store, policy, nil)
	if !k.due(10, t0) {
		t.Fatal("a checkpoint at 10, Every 10: not due")
	}
	k.save(10, []byte("{}"))
	if !k.due(20, t0) {
		t.Fatal("after a small checkpoint, one Every later: not due")
	}
	k.save(20, large)
	gap := k.policy.sizeGap(k.lastBytes)
	if gap < 1000 || gap > 1001 {
		t.Fatalf("after %d bytes: a gap of %d events, want 1,000", k.lastBytes, gap)
	}
	for _, pos := range []uint64{30, 500, 20 + gap - 1} {
		if k.due(pos, t0.Add(time.Hour)) {
			t.Fatalf("after a large checkpoint at 20: due at %d, an hour later", pos)
		}
	}
	if !k.due(20+gap, t0.Add(time.Hour)) {
		t.Fatalf("after a large checkpoint at 20: not due at %d", 20+gap)
	}

	// A Keeper of another process, on the same store: the newest held
	// is large, so the next waits as long.
	store2 := NewMemCheckpointStore()
	if err := store2.Write(100, frameSnapshot(large)); err != nil {
		t.Fatal(err)
	}
	k2 := NewKeeper(store2, policy, nil)
	if k2.due(110, t0) {
		t.Fatal("a new Keeper over a large checkpoint at 100: due at 110")
	}
	if !k2.due(100+k2.policy.sizeGap(k2.lastBytes), t0) {
		t.Fatal("a new Keeper over a large checkpoint: not due after its gap")
	}
}
