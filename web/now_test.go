package web_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"meshplane/agent/simruntime"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
	"meshplane/web"
)

// nowFixture is a controller serving the page over a store where node
// "opx" runs a bit of everything, as its last apply left it:
//
//   - route-proxy's proxy running, and its ca held with the directory it
//     mounts (opx is adopted and /var/lib/route-proxy/ca is found there);
//   - site's web and worker stopped behind the agent's back, then one of
//     them failed to start again ("port 80 is taken") and the other was
//     started: failed and restarted (which one is failed is in
//     nowFixture.failed);
//   - the latest compose failed: opxtypo2 also claims web, so it is
//     pending with the compose's error, while the agent applied its older
//     declaration after it;
//
// and node "quiet" has a module assigned, its push failed (the bus to it
// is cut), and it never reported.
type nowFixture struct {
	*fixture
	failed, restarted string // site's containers: the one that failed to start, the one started
}

const (
	nowClash    = "node opx does not compose: modules opxtypo2 and site both claim web"
	nowStartErr = "port 80 is taken"
)

func newNowFixture(t *testing.T) *nowFixture {
	t.Helper()
	ctx := t.Context()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	clk := &clock{t: sim.Epoch}
	m := sim.New(store, sim.WithClock(clk.Now))
	for _, n := range []string{"opx", "quiet"} {
		if _, err := m.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	do := func(c commands.Command) {
		t.Helper()
		if err := m.Do(ctx, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	do(commands.AdoptNode{Node: "opx"})
	do(commands.DefineModule{Module: "route-proxy", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{
		{Name: "proxy", Image: "scenario.invalid/route-proxy/proxy:1"},
		{Name: "ca", Image: "scenario.invalid/route-proxy/ca:1", Mounts: []events.Mount{{Source: "/var/lib/route-proxy/ca"}}},
	}}})
	do(commands.DefineModule{Module: "site", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{
		{Name: "web", Image: "scenario.invalid/site/web:1"},
		{Name: "worker", Image: "scenario.invalid/site/worker:1"},
	}}})
	do(commands.DefineModule{Module: "opxtypo2", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "scenario.invalid/opxtypo2:1"}}}})
	opx, err := m.Node("opx")
	if err != nil {
		t.Fatal(err)
	}
	if err := opx.Runtime.MakeDirectory("/var/lib/route-proxy/ca", 0o755); err != nil {
		t.Fatal(err)
	}
	do(commands.AssignModule{Module: "route-proxy", Node: "opx"})
	do(commands.AssignModule{Module: "site", Node: "opx"})
	do(commands.AssignModule{Module: "site", Node: "quiet"})
	if _, _, err := m.Pass(ctx, "opx"); err != nil {
		t.Fatal(err)
	}
	// quiet's push fails: the bus to it is cut.
	if err := m.CutBus("quiet"); err != nil {
		t.Fatal(err)
	}
	if err := m.Push(ctx, "quiet"); err == nil || !sim.Recorded(err) {
		t.Fatalf("push over a cut bus: %v, want a recorded push failure", err)
	}
	// The compose that fails, after which the agent re-applies what it has.
	do(commands.AssignModule{Module: "opxtypo2", Node: "opx"})
	if err := m.Push(ctx, "opx"); err == nil || !sim.Recorded(err) {
		t.Fatalf("push of a clash: %v, want a recorded compose failure", err)
	}
	for _, c := range []string{"web", "worker"} {
		if err := opx.Runtime.StopContainer(c); err != nil {
			t.Fatal(err)
		}
	}
	opx.Runtime.FailNext(simruntime.OpStart, 1, errors.New(nowStartErr))
	rep, applied, err := m.Apply(ctx, "opx")
	if err != nil || !applied {
		t.Fatalf("the agent's re-apply: %v %v", applied, err)
	}
	f := &nowFixture{}
	if o := rep.Outcome; len(o.Failed) == 1 && len(o.Updated) == 1 {
		f.failed, f.restarted = o.Failed[0].Name, o.Updated[0].Name
	}
	if f.failed == "" || f.restarted == "" {
		t.Fatalf("the last apply: %+v, want one of web and worker failed and the other updated", rep.Outcome)
	}

	ctl, err := controller.New(controller.Config{Store: store, Clock: clk.Now, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
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
	f.fixture = &fixture{mesh: m, clock: clk, store: store, ctl: ctl, srv: srv}
	return f
}

// TestPageShowsWhatRunsNow: the node's page lists every resource of the
// applied declaration with its state and why, as text in the fragment —
// running, held with the hold's reason, failed with the error, restarted
// as found stopped — beside the failed compose and the pending module,
// and when the node was last heard of; a node that never reported says
// so. (TestPageInChromium's sibling below checks the same in a browser.)
func TestPageShowsWhatRunsNow(t *testing.T) {
	f := newNowFixture(t)
	_, body := f.get(t, "/ui/node?node=opx", testToken)
	body = html.UnescapeString(body)
	for _, w := range []string{
		`<section class="now" data-now="opx"`,
		`<tr data-resource="proxy" class="st-running">`,
		`<tr data-resource="ca" class="st-held">`,
		`<td class="reason-cell">would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken</td>`,
		`<tr data-resource="` + f.failed + `" class="st-failed">`,
		nowStartErr + "</td>",
		`<tr data-resource="` + f.restarted + `" class="st-restarted">`,
		`<td class="state">restarted</td>`,
		`<td class="did">updated (running)</td>`,
		"found stopped behind the agent's back; started again by the last apply",
		`data-count="failed">1 failed</span>`, `data-count="restarted">1 restarted</span>`,
		`data-count="held">2 held</span>`, `data-count="running">1 running</span>`,
		`<p class="error compose-failed">last compose failed `, nowClash + "</p>",
		`<li data-pending="opxtypo2">opxtypo2 pending: the latest compose failed: ` + nowClash + "</li>",
		`<span class="seen" data-seen>last report at `,
	} {
		if !strings.Contains(body, w) {
			t.Errorf("opx's page does not contain %q:\n%s", w, body)
		}
	}
	_, quiet := f.get(t, "/ui/node?node=quiet", testToken)
	if !strings.Contains(html.UnescapeString(quiet), "quiet has never reported an apply") {
		t.Errorf("quiet's page does not say it never reported:\n%s", quiet)
	}
	_, status := f.get(t, "/ui/status", testToken)
	for _, w := range []string{
		`<td class="seen" data-seen><span class="muted">never reported</span></td>`, `<td class="seen" data-seen>last report `,
		`<span class="error push-failed">failed `, // the error as text, not in a title
	} {
		if !strings.Contains(status, w) {
			t.Errorf("the status does not contain %q:\n%s", w, status)
		}
	}
}
