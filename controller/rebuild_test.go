package controller_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// generated is a store a simulated mesh filled (every kind of fault),
// made once for the package's tests, which only read it.
func generated(t *testing.T) *memstore.Store {
	t.Helper()
	gen.once.Do(func() {
		gen.store = memstore.New()
		w := sim.Workload{Nodes: 6, Modules: 8, Containers: 2, ModulesPerNode: 2, ChurnEvery: 3, FlakyEvery: 5, ReassignEvery: 3, BusCutEvery: 4, AdoptedEvery: 2}
		gen.err = sim.New(gen.store).Generate(context.Background(), w, 250)
	})
	if gen.err != nil {
		t.Fatal(gen.err)
	}
	return gen.store
}

var gen struct {
	once  sync.Once
	store *memstore.Store
	err   error
}

// running returns a controller running over store, caught up.
func running(t *testing.T, store *memstore.Store) (context.Context, *controller.Controller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := controller.New(controller.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	if err := ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, ctrl
}

// answers is what the queries say, to compare before, during and after.
type answers struct {
	Status   api.StatusResponse
	Timeline api.TimelinePage
	Churn    api.ChurnResponse
}

func ask(t *testing.T, ctx context.Context, svc api.Service) answers {
	t.Helper()
	var a answers
	var err error
	if a.Status, err = svc.Status(ctx, api.StatusRequest{}); err != nil {
		t.Fatal(err)
	}
	if a.Timeline, err = svc.Timeline(ctx, api.TimelineRequest{Limit: 50}); err != nil {
		t.Fatal(err)
	}
	if a.Churn, err = svc.Churn(ctx, api.ChurnRequest{}); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRebuildWhileQueriesAnswer(t *testing.T) {
	store := generated(t)
	for _, names := range [][]string{nil, {"holds", "status"}, {"timeline"}} {
		t.Run(fmtNames(names), func(t *testing.T) {
			ctx, ctrl := running(t, store)
			head, err := store.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := ask(t, ctx, ctrl)
			var during []answers
			res, err := ctrl.RebuildProgress(ctx, api.RebuildRequest{Projections: names}, func(done, total uint64) {
				if total != head {
					t.Errorf("progress total %d, want the head %d", total, head)
				}
				// The shadow has folded up to done and is not swapped in:
				// the queries answer, from the live state.
				during = append(during, ask(t, ctx, ctrl))
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(during) == 0 {
				t.Fatal("no progress reported: nothing was asked during the rebuild")
			}
			for i, d := range during {
				if !reflect.DeepEqual(d, before) {
					t.Errorf("answer %d during the rebuild differs from the one before it", i)
				}
			}
			if res.Position != head || res.Events != head {
				t.Errorf("rebuilt %d events, swapped at %d; want the head %d", res.Events, res.Position, head)
			}
			want := len(names)
			if want == 0 {
				want = 5
			}
			if len(res.Projections) != want {
				t.Errorf("compared %+v, want %d projections", res.Projections, want)
			}
			for _, c := range res.Projections {
				if !c.Same || c.NewBytes == 0 {
					t.Errorf("%s: a rebuild of the same events differs (or is empty): %+v", c.Name, c)
				}
			}
			if after := ask(t, ctx, ctrl); !reflect.DeepEqual(after, before) {
				t.Error("the answers after the rebuild differ from those before it")
			}
		})
	}
}

func fmtNames(names []string) string {
	if len(names) == 0 {
		return "every projection"
	}
	s := names[0]
	for _, n := range names[1:] {
		s += "+" + n
	}
	return s
}

func TestRebuildOverAPI(t *testing.T) {
	store := generated(t)
	ctx, ctrl := running(t, store)
	srv := httptest.NewServer(httpapi.Handler(ctrl, "tok"))
	defer srv.Close()
	c, err := httpapi.NewClient(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		req   api.RebuildRequest
		code  string // the rejection's, "" for none
		count int
	}{
		{"every projection", api.RebuildRequest{}, "", 5},
		{"one", api.RebuildRequest{Projections: []string{"roster"}}, "", 1},
		{"repeated", api.RebuildRequest{Projections: []string{"churn", "churn"}}, "", 1},
		{"unknown", api.RebuildRequest{Projections: []string{"rooster"}}, commands.CodeInvalid, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Rebuild(ctx, tc.req)
			var rej *commands.Rejection
			switch {
			case tc.code != "":
				if !errors.As(err, &rej) || rej.Code != tc.code {
					t.Fatalf("err = %v, want a rejection %s", err, tc.code)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if res.Position != head || len(res.Projections) != tc.count {
				t.Errorf("result %+v: want position %d and %d projections", res, head, tc.count)
			}
		})
	}
}
