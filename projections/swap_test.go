package projections_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// TestAdopt rebuilds in the shadow and swaps: the live projections, fed by
// a registry that cannot decode apply.reported (so their state lacks every
// apply, and counts each as a failure), take the state of a shadow rebuild
// with the whole vocabulary, at the live runner's position or the
// shadow's, whichever is further.
func TestAdopt(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	mesh := sim.New(store)
	if err := mesh.Generate(ctx, smallWorkload, 250); err != nil {
		t.Fatal(err)
	}
	blind := events.NewRegistry()
	blind.Register(fakeApply{}, 1) // apply.reported fails to decode

	for _, tc := range []struct {
		name        string
		names       []string
		liveAhead   bool // the live runner folds events the shadow has not
		wantSameAll bool
	}{
		{"all, shadow ahead", nil, false, false},
		{"all, live ahead", nil, true, false},
		{"roster only, which ignores applies", []string{"roster"}, false, true},
		{"holds only", []string{"holds"}, true, false},
		{"status and the churn it reads", []string{"churn", "status"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := projections.New()
			r := projections.NewRunner(store, blind, live.All()...)
			fresh := projections.New()
			feed := fresh.Feed(tc.names...)
			shadow := projections.NewRunner(store, events.NewRegistry(), feed...)
			head, err := store.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.liveAhead {
				if err := r.CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
				if err := shadow.CatchUpTo(ctx, head/2); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := r.CatchUpTo(ctx, head/2); err != nil {
					t.Fatal(err)
				}
				if err := shadow.CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
			}
			pos, cmp, err := r.Adopt(ctx, live, shadow, fresh, tc.names...)
			if err != nil {
				t.Fatal(err)
			}
			if pos != head || r.Position() != head {
				t.Fatalf("adopted at %d, runner at %d, want the head %d", pos, r.Position(), head)
			}
			if want := len(tc.names); want > 0 && len(cmp) != want || want == 0 && len(cmp) != len(live.All()) {
				t.Fatalf("compared %+v, want the projections named %v", cmp, tc.names)
			}
			same := true
			for _, c := range cmp {
				same = same && c.Same
			}
			if same != tc.wantSameAll {
				t.Errorf("compared %+v: all same = %v, want %v", cmp, same, tc.wantSameAll)
			}

			// The reference: a rebuild with the whole vocabulary.
			ref := projections.New()
			if err := projections.NewRunner(store, events.NewRegistry(), ref.All()...).CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			for i, p := range live.All() {
				got, err := p.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.All()[i].MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				swapped := len(tc.names) == 0 || slices.Contains(tc.names, p.Name())
				if swapped && !bytes.Equal(got, want) {
					t.Errorf("%s: not the rebuild's state after the swap", p.Name())
				}
			}
			if _, failed := r.Failures(); (len(tc.names) == 0) != (failed == 0) {
				t.Errorf("%d failures after adopting %v: want the shadow's (none) after adopting all, the live runner's otherwise", failed, tc.names)
			}

			// The live runner folds on from there.
			if _, err := store.Append(ctx, "node-later", events.Any, events.Event{
				ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1, Data: []byte(`{"node":"later"}`),
			}); err != nil {
				t.Fatal(err)
			}
			if err := r.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			if h, _ := store.Head(ctx); r.Position() != h {
				t.Errorf("runner at %d after catching up, want %d", r.Position(), h)
			}
		})
	}
}

func TestAdoptRefusesUnknownName(t *testing.T) {
	store := memstore.New()
	defer store.Close()
	live, fresh := projections.New(), projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), live.All()...)
	shadow := projections.NewRunner(store, events.NewRegistry(), fresh.Roster)
	for _, names := range [][]string{{"nonsense"}, {"status"}} { // status: not fed by the shadow
		if _, _, err := r.Adopt(context.Background(), live, shadow, fresh, names...); err == nil {
			t.Errorf("Adopt(%v) succeeded", names)
		}
	}
}

// fakeApply stands for apply.reported in a registry that must not fold
// it: its node does not decode, so the runner counts a failure.
type fakeApply struct {
	Node int `json:"node"`
}

func (fakeApply) EventType() string { return events.TypeApplyReported }

// smallWorkload has every kind of fault of sim.DefaultWorkload on half the
// mesh, so a run under -race stays short.
var smallWorkload = sim.Workload{
	Nodes: 6, Modules: 8, Containers: 2, ModulesPerNode: 2,
	ChurnEvery: 3, FlakyEvery: 5, ReassignEvery: 3, BusCutEvery: 4, AdoptedEvery: 2,
}

// TestCheckNames: every name of Names passes; another is ErrNoProjection
// naming them all.
func TestCheckNames(t *testing.T) {
	if err := projections.CheckNames(projections.Names()); err != nil {
		t.Fatal(err)
	}
	err := projections.CheckNames([]string{"status", "nosuch"})
	if !errors.Is(err, projections.ErrNoProjection) || !strings.Contains(err.Error(), `no projection "nosuch": want `+strings.Join(projections.Names(), ", ")) {
		t.Errorf("CheckNames(nosuch): %v", err)
	}
}

// TestAdoptAfterRestore: live projections restored from a snapshot hold
// what it kept, not the whole history, so Adopt compares what a checkpoint
// keeps of each side (Kept): the same events give Same, a state folded
// wrong before the snapshot still differs, and once every projection is
// adopted (a fold from 0 now), the next Adopt compares the whole state.
func TestAdoptAfterRestore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	if err := sim.New(store).Generate(ctx, smallWorkload, 400); err != nil {
		t.Fatal(err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	blind := events.NewRegistry()
	blind.Register(fakeApply{}, 1)
	adopt := func(t *testing.T, r *projections.Runner, live *projections.Set) []projections.Compared {
		t.Helper()
		fresh := projections.New()
		shadow := projections.NewRunner(store, events.NewRegistry(), fresh.All()...)
		if err := shadow.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		_, cmp, err := r.Adopt(ctx, live, shadow, fresh)
		if err != nil {
			t.Fatal(err)
		}
		return cmp
	}
	for _, tc := range []struct {
		name     string
		reg      *events.Registry // of the run the snapshot was taken from
		wantSame bool
	}{
		{"the same events", events.NewRegistry(), true},
		{"folded blind to applies before the snapshot", blind, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := projections.New()
			br := projections.NewRunner(store, tc.reg, before.All()...)
			if err := br.CatchUpTo(ctx, head/2); err != nil {
				t.Fatal(err)
			}
			path := t.TempDir() + "/snap"
			if err := projections.SaveSnapshot(ctx, path, br, before); err != nil {
				t.Fatal(err)
			}
			live := projections.New()
			r := projections.NewRunner(store, events.NewRegistry(), live.All()...)
			if _, err := projections.LoadSnapshot(ctx, path, r, live); err != nil {
				t.Fatal(err)
			}
			if err := r.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			same := true
			for _, c := range adopt(t, r, live) {
				if !c.Kept {
					t.Errorf("%s: compared whole after a restore: %+v", c.Name, c)
				}
				same = same && c.Same
			}
			if same != tc.wantSame {
				t.Errorf("all same = %v, want %v", same, tc.wantSame)
			}
			for _, c := range adopt(t, r, live) {
				if c.Kept || !c.Same {
					t.Errorf("%s: after adopting a fold from 0: %+v, want the whole state compared, same", c.Name, c)
				}
			}
		})
	}
}
