package projections_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// twoWays folds store's history twice, as a Runner does: once with runs
// (the Runner gives the timeline its store to read them back from) and once
// with every entry kept (no reader).
func twoWays(t *testing.T, store events.Store) (folded, kept *projections.Set) {
	t.Helper()
	ctx := context.Background()
	folded, kept = projections.New(), projections.New()
	if err := projections.NewRunner(store, events.NewRegistry(), folded.All()...).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	r := projections.NewRunner(store, events.NewRegistry(), kept.All()...)
	kept.Timeline.SetRunReader(nil)
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := kept.Timeline.RunEntries(); n != 0 {
		t.Fatalf("a timeline without a reader keeps %d entries in runs", n)
	}
	return folded, kept
}

// quietHistory is a sim history of about n events, then passes quiet
// passes of every node (an apply report naming the declaration it holds,
// nothing changed), a few of them interleaved with what ends a run: a
// report that held something, one delivered late (its time behind the
// latest), an operator's setting on the node.
func quietHistory(t *testing.T, n uint64, passes int) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	if err := sim.New(store).Generate(ctx, sim.DefaultWorkload, n); err != nil {
		t.Fatal(err)
	}
	views := projections.New()
	if err := projections.NewRunner(store, events.NewRegistry(), views.All()...).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	evs, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := evs[len(evs)-1].At
	nodes := views.Status.Nodes()
	r := rand.New(rand.NewPCG(3, 5))
	for p := range passes {
		at = at.Add(5 * time.Minute)
		for i, node := range nodes {
			st, err := views.Status.Of(node)
			if err != nil || st.Composed == nil {
				continue
			}
			a := events.ApplyReported{Node: node, Declaration: st.Composed.Declaration, Digest: st.Composed.Digest, Sent: 3, Applied: 3, Unchanged: 3}
			when := at.Add(time.Duration(i) * time.Second)
			switch x := r.IntN(40); {
			case x == 0:
				a.Held = []events.Held{{Name: "held-" + node, Module: "mod-000", Reason: "adopted: not taken"}}
			case x == 1:
				when = when.Add(-20 * time.Minute) // late
			case x == 2:
				if err := appendOne(ctx, store, reg, events.NodeStream(node), events.NodeSettingSet{Node: node, Key: "k", Value: fmt.Sprint(p)}, "operator:jo", when); err != nil {
					t.Fatal(err)
				}
			case x == 3:
				a.Unchanged = 2 // another outcome
			}
			if err := appendOne(ctx, store, reg, events.NodeStream(node), a, "agent:"+node, when); err != nil {
				t.Fatal(err)
			}
		}
	}
	return store
}

func appendOne(ctx context.Context, store events.Store, reg *events.Registry, stream string, p events.Payload, actor string, at time.Time) error {
	ev, err := reg.New(stream, p, events.Meta{ID: uuid.New(), At: at, Actor: actor, Correlation: "c-" + actor})
	if err != nil {
		return err
	}
	_, err = store.Append(ctx, stream, events.Any, ev)
	return err
}

// TestRunsAnswerAsEntries: a timeline that keeps a node's quiet passes as
// runs, read back from the store, answers every query as one that keeps
// every entry: random filters (node, type, module, resource, correlation,
// time range, position cursors, limit, both directions), pages by cursor,
// why, the commands and deploys behind an apply, its JSON and its keys.
func TestRunsAnswerAsEntries(t *testing.T) {
	store := quietHistory(t, 3000, 120)
	folded, kept := twoWays(t, store)
	members, runs := folded.Timeline.RunEntries()
	if members < folded.Timeline.Len()/3 || runs == 0 {
		t.Fatalf("%d of %d entries in %d runs: a third of the history should be runs", members, folded.Timeline.Len(), runs)
	}
	if folded.Timeline.Len() != kept.Timeline.Len() {
		t.Fatalf("len %d, kept %d", folded.Timeline.Len(), kept.Timeline.Len())
	}
	for _, mode := range []struct {
		name string
		runs int
	}{{"runs read a run at a time", 1 << 30}, {"runs read off the log", 0}, {"the log past 4 runs", 4}} {
		t.Run(mode.name, func(t *testing.T) {
			defer projections.SetLogRuns(mode.runs)()
			answersAsKept(t, folded.Timeline, kept.Timeline)
		})
	}
	kf, err := folded.Timeline.TakeKeys()
	if err != nil {
		t.Fatal(err)
	}
	kk, err := kept.Timeline.TakeKeys()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(kf, kk) {
		t.Fatalf("keys differ: %d, kept %d", len(kf), len(kk))
	}
	if n, runs := folded.Timeline.RunEntries(); n != 0 || runs != 0 {
		t.Fatalf("after TakeKeys, %d entries in %d runs", n, runs)
	}
}

// answersAsKept fails unless folded answers every query as kept does.
func answersAsKept(t *testing.T, folded, kept *projections.Timeline) {
	all := kept.Query(projections.Filter{})
	jf, err := folded.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	jk, err := kept.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(jf) != string(jk) {
		t.Fatalf("JSON differs (%d bytes, kept %d)", len(jf), len(jk))
	}
	r := rand.New(rand.NewPCG(11, 23))
	for i := range 1500 {
		f := randomFilter(r, all, i)
		if r.IntN(2) == 0 {
			f.To = all[r.IntN(len(all))].At.Add(time.Duration(r.IntN(3)-1) * time.Second)
		}
		if r.IntN(2) == 0 {
			f.After = all[r.IntN(len(all))].Position - uint64(r.IntN(2))
		}
		if r.IntN(2) == 0 {
			f.Before = all[r.IntN(len(all))].Position + uint64(r.IntN(2))
		}
		if r.IntN(3) > 0 {
			f.Limit = 1 + r.IntN(60)
		}
		got, err := folded.Read(f)
		if err != nil {
			t.Fatalf("filter %+v: %v", f, err)
		}
		if want := kept.Query(f); !reflect.DeepEqual(got, want) {
			t.Fatalf("filter %+v: positions %v, want %v", f, positions(got), positions(want))
		}
		if i%10 == 0 { // a page walk of the same filter, by cursor
			g := f
			g.Limit = 1 + r.IntN(40)
			if pf, pk := pages(t, folded, g), pages(t, kept, g); !slices.Equal(pf, pk) {
				t.Fatalf("filter %+v: pages %v, want %v", g, pf, pk)
			}
		}
	}
	// Why and Declared depend on the node and resource alone: each pair is
	// asked once; what is behind an apply, at every apply.
	asked := map[[2]string]bool{}
	for _, en := range all {
		if en.Node == "" {
			continue
		}
		for _, res := range append(slices.Clone(en.Resources), "held-"+en.Node, "mod-000-c0", "nothing") {
			if pair := [2]string{en.Node, res}; !asked[pair] {
				asked[pair] = true
				wf, errF := folded.Why(en.Node, res)
				wk, errK := kept.Why(en.Node, res)
				if !reflect.DeepEqual(wf, wk) || (errF == nil) != (errK == nil) {
					t.Fatalf("why %s on %s: %d touches (%v), want %d (%v)", res, en.Node, len(wf), errF, len(wk), errK)
				}
				if folded.Declared(en.Node, res) != kept.Declared(en.Node, res) {
					t.Fatalf("declared %s on %s differs", res, en.Node)
				}
			}
			if en.Type != events.TypeApplyReported {
				continue
			}
			cf, errF := folded.CommandsBehind(en.Node, res, en.Position)
			ck, errK := kept.CommandsBehind(en.Node, res, en.Position)
			if !reflect.DeepEqual(cf, ck) || errF != nil || errK != nil {
				t.Fatalf("commands behind %s at %d: %v (%v), want %v (%v)", res, en.Position, positions(cf), errF, positions(ck), errK)
			}
			df, errF := folded.DeployBehind(en.Node, res, en.Position)
			dk, errK := kept.DeployBehind(en.Node, res, en.Position)
			if !reflect.DeepEqual(df, dk) || errF != nil || errK != nil {
				t.Fatalf("deploy behind %s at %d: %v (%v), want %v (%v)", res, en.Position, positions(df), errF, positions(dk), errK)
			}
		}
	}
}

// pages is every position f's pages select, walked by cursor in f's
// direction.
func pages(t *testing.T, tl *projections.Timeline, f projections.Filter) []uint64 {
	t.Helper()
	var out []uint64
	for range 10000 {
		p, err := tl.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			return out
		}
		out = append(out, positions(p)...)
		if f.Forward {
			f.After = p[len(p)-1].Position
		} else {
			f.Before = p[0].Position
		}
	}
	t.Fatalf("filter %+v: no end of pages", f)
	return nil
}

// failingReader fails every read, of a stream and of the log.
type failingReader struct{}

var errDown = errors.New("store down")

func (failingReader) ReadStream(context.Context, string, uint64, int) ([]events.Event, error) {
	return nil, errDown
}

func (failingReader) ReadAll(context.Context, uint64, int) ([]events.Event, error) {
	return nil, errDown
}

// shortReader drops the last event of every read of a stream: the stream
// no longer holds what was folded. It does not read the log.
type shortReader struct{ s events.Store }

func (s shortReader) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	evs, err := s.s.ReadStream(ctx, stream, after, limit)
	if len(evs) > 0 {
		evs = evs[:len(evs)-1]
	}
	return evs, err
}

// failingLog reads streams and fails every read of the log.
type failingLog struct{ events.Store }

func (failingLog) ReadAll(context.Context, uint64, int) ([]events.Event, error) {
	return nil, errDown
}

// TestRunsThatCannotBeReadBack: when a run's entries cannot be read back
// (the store fails, or does not hold them), the answers that need them
// say so (ErrRunRead), and those that do not are given.
func TestRunsThatCannotBeReadBack(t *testing.T) {
	store := quietHistory(t, 1500, 20)
	for name, rd := range map[string]projections.RunReader{"failing": failingReader{}, "short": shortReader{store}, "failing log": failingLog{store}} {
		t.Run(name, func(t *testing.T) {
			defer projections.SetLogRuns(0)() // the log read whenever a run may answer
			folded, kept := twoWays(t, store)
			folded.Timeline.SetRunReader(rd)
			if _, err := folded.Timeline.Read(projections.Filter{}); !errors.Is(err, projections.ErrRunRead) {
				t.Errorf("read of every entry: %v, want ErrRunRead", err)
			}
			if _, err := folded.Timeline.MarshalJSON(); !errors.Is(err, projections.ErrRunRead) {
				t.Errorf("JSON: %v, want ErrRunRead", err)
			}
			if _, err := folded.Timeline.TakeKeys(); !errors.Is(err, projections.ErrRunRead) {
				t.Errorf("keys: %v, want ErrRunRead", err)
			}
			if n, _ := folded.Timeline.RunEntries(); n == 0 {
				t.Errorf("a failed TakeKeys forgot the runs")
			}
			f := projections.Filter{Type: events.TypeDeclarationComposed}
			got, err := folded.Timeline.Read(f)
			if err != nil || !reflect.DeepEqual(got, kept.Timeline.Query(f)) {
				t.Errorf("composed entries (no run): %d, %v", len(got), err)
			}
			// Why's halves for an apply inside a run: what the fold from 0
			// gives, or an error saying the run was not read; never none.
			applies := kept.Timeline.Query(projections.Filter{Type: events.TypeApplyReported})
			en := applies[len(applies)-2]
			composed := kept.Timeline.Query(projections.Filter{Node: en.Node, Type: events.TypeDeclarationComposed})
			if len(composed) == 0 || len(composed[len(composed)-1].Modules) == 0 {
				t.Fatalf("%s has no declaration naming a module", en.Node)
			}
			for _, m := range composed[len(composed)-1].Modules {
				r := m + "-c0" // sim's first container of a module
				cf, err := folded.Timeline.CommandsBehind(en.Node, r, en.Position)
				ck, _ := kept.Timeline.CommandsBehind(en.Node, r, en.Position)
				if !errors.Is(err, projections.ErrRunRead) && (err != nil || !reflect.DeepEqual(cf, ck)) || name == "failing" && err == nil {
					t.Errorf("commands behind %s at %d: %v, %v; want %v or ErrRunRead", r, en.Position, positions(cf), err, positions(ck))
				}
				df, err := folded.Timeline.DeployBehind(en.Node, r, en.Position)
				dk, _ := kept.Timeline.DeployBehind(en.Node, r, en.Position)
				if !errors.Is(err, projections.ErrRunRead) && (err != nil || !reflect.DeepEqual(df, dk)) || name == "failing" && err == nil {
					t.Errorf("deploy behind %s at %d: %v, %v; want %v or ErrRunRead", r, en.Position, positions(df), err, positions(dk))
				}
			}
		})
	}
}

// TestCheckpointsOfRuns: checkpoints kept while a timeline folds runs (a
// snapshot holds the timeline's fold state, not its entries, runs or not)
// resume to the projections folded from 0, at the edges of runs too.
func TestCheckpointsOfRuns(t *testing.T) {
	store := quietHistory(t, 1500, 40)
	head, err := store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	k, notes := kept(t, store, t.TempDir(), projections.KeepPolicy{Every: 200, MaxCount: 6}, 97)
	ps := k.Positions()
	if len(ps) < 3 {
		t.Fatalf("checkpoints at %v", ps)
	}
	// Each just before the next checkpoint (the most folded after one),
	// and the head.
	var at []uint64
	for i := 1; i < len(ps); i++ {
		at = append(at, ps[i]-1)
	}
	for _, pos := range append(at, head) {
		sameAt(t, store, pos, k)
		// The timeline from a checkpoint holds the entries after it: those
		// of the one folded from 0 (churn marks aside: see sameAt).
		got, _, err := projections.FoldTo(context.Background(), store, events.NewRegistry(), pos, k)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := projections.FoldTo(context.Background(), store, events.NewRegistry(), pos, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, err := got.Timeline.Read(projections.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(g) == 0 {
			continue
		}
		w := want.Timeline.Query(projections.Filter{After: g[0].Position - 1})
		if len(g) != len(w) {
			t.Fatalf("at %d: %d entries after the checkpoint, want %d", pos, len(g), len(w))
		}
		for i := range g {
			if g[i].Position != w[i].Position || !g[i].At.Equal(w[i].At) || g[i].Type != w[i].Type || !slices.Equal(g[i].Resources, w[i].Resources) {
				t.Fatalf("at %d: entry %d is %+v, want %+v", pos, i, g[i], w[i])
			}
		}
	}
	// The last stretch of quiet passes folds into runs from its checkpoint.
	set, _, err := projections.FoldTo(context.Background(), store, events.NewRegistry(), ps[len(ps)-1]-1, k)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := set.Timeline.RunEntries(); n == 0 {
		t.Errorf("checkpoints at %v, head %d: no run folded after %d", ps, head, ps[len(ps)-2])
	}
	if len(*notes) > 0 {
		t.Errorf("notes: %q", *notes)
	}
}
