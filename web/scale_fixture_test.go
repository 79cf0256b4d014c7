package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"meshplane/agent/simruntime"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events/memstore"
	"meshplane/sim"
	"meshplane/web"
)

// scaleWorkload is the mesh of the page's scale tests: a thousand nodes
// (sim's generated mesh: node-000 …, two modules of two containers each),
// every fiftieth adopted with its first module's data found on disk.
var scaleWorkload = sim.Workload{Nodes: 1000, Modules: 40, Containers: 2, ModulesPerNode: 2, AdoptedEvery: 50}

// Nodes of the scale fixture that are not well, each in its own way.
const (
	scaleFailing = "node-700" // a container failed to be created in its one pass
	scalePending = "node-016" // a module assigned after its pass: pending
	scaleSilent  = "late-one" // registered, never reported
)

// newScaleFixture is a controller over a thousand-node mesh after one pass
// of every node, served as the daemon serves it: most nodes converged,
// the adopted ones waiting on take, scaleFailing failing, scalePending with
// a pending module and scaleSilent unknown. It takes 15 s on an idle
// machine, about 3 minutes under -race: each of the thousand passes
// composes against the whole mesh (commands.Compose).
func newScaleFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	clk := &clock{t: sim.Epoch}
	m := sim.New(store, sim.WithClock(clk.Now))
	if err := m.Setup(ctx, scaleWorkload); err != nil {
		t.Fatal(err)
	}
	failing, err := m.Node(scaleFailing)
	if err != nil {
		t.Fatal(err)
	}
	failing.Runtime.FailNext(simruntime.OpCreate, 1, errors.New("port 80 is taken"))
	if err := m.Round(ctx, scaleWorkload, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Do(ctx, commands.AssignModule{Module: "mod-039", Node: scalePending}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddNode(ctx, scaleSilent); err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{Store: store, Clock: clk.Now, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	if err := ctl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	streams := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.Handler(ctl, testToken))
	mux.Handle("/", web.Handler(ctl, testToken, web.Options{Feed: ctl, Done: streams, MinInterval: 20 * time.Millisecond}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(streams) })
	head, _ := store.Head(ctx)
	t.Logf("scale fixture: %d nodes, %d events, built in %s", scaleWorkload.Nodes+1, head, time.Since(start).Round(time.Millisecond))
	return &fixture{mesh: m, clock: clk, store: store, ctl: ctl, srv: srv}
}
