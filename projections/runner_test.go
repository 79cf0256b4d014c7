package projections

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
)

// history generates n events or so of a small mesh: operator commands,
// passes (some heavy, some holding, some failing), compose failures, roster
// flips, and hand-written events without the added fields.
func history(tb testing.TB, seed uint64, passes int) *gen {
	rng := rand.New(rand.NewPCG(seed, 1))
	g := newGen(tb)
	nodes := []string{"novox", "g14", "ace"}
	mods := []string{"route-proxy", "forge", "photos"}
	for _, n := range nodes {
		g.op(n, events.NodeRegistered{Node: n})
	}
	g.op("novox", events.NodeAdopted{Node: "novox"})
	count := map[string]int{}
	for i := 0; i < passes; i++ {
		n := nodes[rng.IntN(len(nodes))]
		switch rng.IntN(10) {
		case 0:
			g.assign(mods[rng.IntN(len(mods))], n)
			continue
		case 1:
			g.add(events.ModuleStream("forge"), "operator:jo", "", events.ModuleDefined{Module: "forge"})
			continue
		case 2:
			g.composeFailed(n, "node g14", "store unavailable")
			continue
		case 3:
			g.raw(events.NodeStream(n), events.TypeApplyReported,
				fmt.Sprintf(`{"node":%q,"declaration":"%s/%d","sent":4,"applied":4,"created":["m-0","m-1"]}`, n, n, count[n]))
			continue
		}
		count[n]++
		decl := fmt.Sprintf("%s/%d", n, count[n])
		digest := []string{"A", "B"}[rng.IntN(2)]
		roster := []string{"a.internal"}
		if digest == "B" {
			roster = append(roster, "searxng.zurag.be")
		}
		res := append(resources(mods[rng.IntN(3)], 4, digest), resources("m", 2, digest)...)
		g.composed(n, decl, digest, roster, res).pushed(n, decl, digest, len(res))
		a := events.ApplyReported{Declaration: decl, Sent: len(res), Applied: len(res)}
		for _, r := range res[:rng.IntN(len(res)+1)] {
			a.Replaced = append(a.Replaced, events.Replaced{Name: r.Name, Fields: []string{"image"}})
		}
		if rng.IntN(4) == 0 {
			a.Held = []events.Held{{Name: res[0].Name, Module: res[0].Module, Reason: "not run until taken"}}
		}
		if rng.IntN(6) == 0 {
			a.Failed = []events.Failed{{Name: res[1].Name, Error: "boom"}}
		}
		g.applied(n, a)
	}
	return g
}

// stored appends g's events to a fresh memstore, in order.
func stored(tb testing.TB, g *gen, opts ...memstore.Option) *memstore.Store {
	tb.Helper()
	s := memstore.New(opts...)
	ctx := context.Background()
	for _, ev := range g.evs {
		if _, err := s.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			tb.Fatalf("append %s: %v", ev, err)
		}
	}
	return s
}

func snapshot(tb testing.TB, s *Set) []byte {
	tb.Helper()
	b, err := s.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestRebuildIsDeterministic(t *testing.T) {
	ctx := context.Background()
	g := history(t, 7, 300)
	store := stored(t, g)
	reg := events.NewRegistry()

	// Live: a runner subscribed before the events arrive.
	liveSet := New()
	liveStore := memstore.New()
	live := NewRunner(liveStore, reg, liveSet.All()...)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- live.Run(runCtx) }()
	for _, ev := range g.evs {
		if _, err := liveStore.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := live.WaitFor(wctx, uint64(len(g.evs))); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	liveSnap := snapshot(t, liveSet)

	set := New()
	r := NewRunner(store, reg, set.All()...)
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	caught := snapshot(t, set)
	if err := r.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	first := snapshot(t, set)
	if err := r.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	second := snapshot(t, set)

	if !bytes.Equal(first, second) {
		t.Error("two rebuilds differ")
	}
	if !bytes.Equal(first, caught) {
		t.Error("a rebuild differs from the caught-up state")
	}
	if !bytes.Equal(first, liveSnap) {
		t.Error("a rebuild differs from the live state")
	}
	if r.Position() != uint64(len(g.evs)) {
		t.Errorf("position %d, want %d", r.Position(), len(g.evs))
	}
	// The history is rich enough to mean something.
	if set.Timeline.Len() != len(g.evs) || len(set.Status.Nodes()) != 3 {
		t.Errorf("timeline %d entries, status nodes %v", set.Timeline.Len(), set.Status.Nodes())
	}
	var episodes int
	for _, n := range []string{"novox", "g14", "ace"} {
		episodes += len(set.Churn.Episodes(n))
	}
	if episodes == 0 {
		t.Error("the generated history opened no churn episode")
	}
	if _, total := r.Failures(); total != 0 {
		t.Errorf("%d failures folding a well-formed history", total)
	}
}

func TestRunnerCountsAndSkips(t *testing.T) {
	ctx := context.Background()
	g := newGen(t).
		composed("novox", "novox/1", "A", []string{"a"}, resources("m", 1, "A")).
		raw("node-novox", "node.renamed", `{"node":"novox","to":"novax"}`).
		raw("node-novox", "node.renamed", `{}`).
		raw("node-novox", events.TypeApplyReported, `{"node":"novox","sent":"many"}`).
		raw("elsewhere", events.TypeApplyReported, `{"declaration":"x/1"}`).
		applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 1, Applied: 1, Unchanged: 1})
	set := New()
	r := NewRunner(stored(t, g), events.NewRegistry(), set.All()...)
	if err := r.CatchUp(ctx); err != nil {
		t.Fatalf("catch up: %v", err)
	}
	if r.Position() != 6 {
		t.Errorf("position %d, want 6", r.Position())
	}
	if u := r.Unknown(); len(u) != 1 || u["node.renamed"] != 2 {
		t.Errorf("unknown %v, want node.renamed: 2", u)
	}
	kept, total := r.Failures()
	// position 4 does not decode; position 5 names no node (churn, status, holds refuse it)
	if total != 4 || len(kept) != 4 {
		t.Fatalf("failures %d %+v", total, kept)
	}
	if kept[0].Position != 4 || kept[0].Projection != "" || !bytes.Contains([]byte(kept[0].Err), []byte("sent")) {
		t.Errorf("decode failure %+v", kept[0])
	}
	for _, f := range kept[1:] {
		if f.Position != 5 || f.Projection == "" {
			t.Errorf("refusal %+v", f)
		}
	}
	if conv, err := set.Status.Converged("novox"); err != nil || !conv {
		t.Errorf("novox converged = %v, %v: a bad event stopped the fold", conv, err)
	}
	if n := set.Timeline.Len(); n != 3 {
		t.Errorf("timeline has %d entries, want 3 (unknown and undecodable skipped)", n)
	}
	if err := r.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if u := r.Unknown(); u["node.renamed"] != 2 {
		t.Errorf("after rebuild, unknown %v", u)
	}
	if _, total := r.Failures(); total != 4 {
		t.Errorf("after rebuild, %d failures", total)
	}
}

func TestRunnerReadFailureIsAnError(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("disk on fire")
	failing := false
	g := history(t, 1, 20)
	store := stored(t, g, memstore.WithFault(func(op memstore.Op, _ string) error {
		if failing && op == memstore.OpReadAll {
			return boom
		}
		return nil
	}))
	failing = true
	set := New()
	r := NewRunner(store, events.NewRegistry(), set.All()...)
	err := r.CatchUp(ctx)
	if !errors.Is(err, boom) {
		t.Fatalf("catch up = %v, want the read failure", err)
	}
	if r.Position() != 0 || set.Timeline.Len() != 0 {
		t.Errorf("position %d, %d entries after a failed read", r.Position(), set.Timeline.Len())
	}
	if err := r.Rebuild(ctx); !errors.Is(err, boom) {
		t.Errorf("rebuild = %v, want the read failure", err)
	}
}

func TestRunnerCheckpoints(t *testing.T) {
	ctx := context.Background()
	g := history(t, 3, 30)
	store := stored(t, g)
	cp := NewMemCheckpoints()
	set := New()
	r := NewRunnerWithCheckpoints(store, events.NewRegistry(), cp, "test", set.All()...)
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	head := uint64(len(g.evs))
	if got, _ := cp.Load(ctx, "test"); got != head {
		t.Errorf("checkpoint %d, want %d", got, head)
	}
	// More events; a second runner on the same checkpoint folds only those.
	extra := newGen(t).applied("novox", events.ApplyReported{Declaration: "novox/99"}).evs[0]
	extra.ID = events.NewID()
	if _, err := store.Append(ctx, "node-novox", events.Any, extra); err != nil {
		t.Fatal(err)
	}
	tl := NewTimeline()
	r2 := NewRunnerWithCheckpoints(store, events.NewRegistry(), cp, "test", tl)
	if err := r2.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if tl.Len() != 1 || r2.Position() != head+1 {
		t.Errorf("second runner folded %d events, at %d; want 1 at %d", tl.Len(), r2.Position(), head+1)
	}
	if got, _ := cp.Load(ctx, "test"); got != head+1 {
		t.Errorf("checkpoint %d, want %d", got, head+1)
	}
}

func TestRunnerWaitFor(t *testing.T) {
	store := memstore.New()
	r := NewRunner(store, events.NewRegistry(), New().All()...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.WaitFor(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor on an empty store = %v, want a deadline", err)
	}
	if err := r.WaitFor(context.Background(), 0); err != nil {
		t.Errorf("WaitFor(0) = %v", err)
	}
}

// TestRunnerQueriesWhileRunning reads every projection while the runner
// folds, for the race detector.
func TestRunnerQueriesWhileRunning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := history(t, 5, 200)
	store := memstore.New()
	set := New()
	r := NewRunner(store, events.NewRegistry(), set.All()...)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	go func() {
		for _, ev := range g.evs {
			if _, err := store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
				return
			}
		}
	}()
	for r.Position() < uint64(len(g.evs)) {
		_, _ = set.Status.Of("novox")
		_, _ = set.Roster.Contains("novox", "searxng.zurag.be")
		_, _ = set.Holds.Of("g14")
		_ = set.Timeline.Query(Filter{Node: "novox", Limit: 3})
		_ = set.Churn.Active("novox")
		_, _ = set.MarshalJSON()
		_ = r.Unknown()
	}
	if err := r.CatchUp(ctx); err != nil { // concurrently with Run: folds nothing twice
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if set.Timeline.Len() != len(g.evs) {
		t.Errorf("%d entries for %d events", set.Timeline.Len(), len(g.evs))
	}
}

func TestRunnerRunReturnsStoreFailure(t *testing.T) {
	store := memstore.New()
	r := NewRunner(store, events.NewRegistry(), New().All()...)
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, events.ErrClosed) {
			t.Errorf("run on a closed store = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return when the store closed")
	}
}

// scribbler is a store that scans (events.Scanner) the way PostgreSQL's
// does: each event's data is in a buffer it reuses, here overwritten as
// soon as fn returns, so a projection that kept any of it would show it.
type scribbler struct {
	events.Store
	scans atomic.Int32 // workers scan side by side
}

func (s *scribbler) ScanAll(ctx context.Context, after uint64, limit int, fn func(events.Event) error) error {
	s.scans.Add(1)
	evs, err := s.ReadAll(ctx, after, limit)
	if err != nil {
		return err
	}
	var buf []byte
	for _, ev := range evs {
		buf = append(buf[:0], ev.Data...)
		ev.Data = buf
		if err := fn(ev); err != nil {
			return err
		}
		for i := range buf {
			buf[i] = '#'
		}
	}
	return nil
}

// TestRebuildFromAScannerKeepsNoData: a catch-up from a store that scans
// decodes each payload while its bytes are valid and keeps nothing of them:
// the rebuild is the one a store that copies gives. The history is pages
// long, so that the runner fills pages it has folded again, which a
// projection keeping a pointer into a page would show too.
func TestRebuildFromAScannerKeepsNoData(t *testing.T) {
	ctx := context.Background()
	g := history(t, 11, 7000)
	reg := events.NewRegistry()

	want := New()
	if err := NewRunner(stored(t, g), reg, want.All()...).Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	sc := &scribbler{Store: stored(t, g)}
	got := New()
	r := NewRunner(sc, reg, got.All()...)
	if err := r.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if pages := (len(g.evs) + PageSize - 1) / PageSize; int(sc.scans.Load()) < pages || pages < 4 {
		t.Fatalf("%d scans of %d pages: the runner read the store that scans with ReadAll, or the history is too short", sc.scans.Load(), pages)
	}
	if !bytes.Equal(snapshot(t, got), snapshot(t, want)) {
		t.Error("a rebuild from a store that scans differs from one from a store that copies")
	}
	if _, total := r.Failures(); total != 0 {
		t.Errorf("%d failures folding a well-formed history", total)
	}
}
