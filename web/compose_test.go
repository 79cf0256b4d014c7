package web_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
	"meshplane/web"
)

// TestPageShowsAFailedCompose: issue 20's first bullet on the page. A
// module whose container name clashes with one on the node does not
// compose; the agent's re-apply of the older declaration comes after, and
// the status table and the node's page still say failing, with the
// compose's error and the pending module, readable without hovering. A
// node that never reported reads unknown.
func TestPageShowsAFailedCompose(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	m := sim.New(store)
	for _, n := range []string{"opx", "quiet"} {
		if _, err := m.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []commands.Command{
		commands.DefineModule{Module: "opxweb", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "scenario.invalid/opxweb:1"}}}},
		commands.DefineModule{Module: "opxtypo2", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "scenario.invalid/opxtypo2:1"}}}},
		commands.AssignModule{Module: "opxweb", Node: "opx"},
		commands.AssignModule{Module: "opxweb", Node: "quiet"},
	} {
		if err := m.Do(ctx, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	if _, _, err := m.Pass(ctx, "opx"); err != nil {
		t.Fatal(err)
	}
	if err := m.Do(ctx, commands.AssignModule{Module: "opxtypo2", Node: "opx"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Push(ctx, "opx"); err == nil || !sim.Recorded(err) {
		t.Fatalf("push of a clash: %v, want a recorded compose failure", err)
	}
	if _, applied, err := m.Apply(ctx, "opx"); err != nil || !applied {
		t.Fatalf("the agent's re-apply of its older declaration: %v %v", applied, err)
	}

	ctl, err := controller.New(controller.Config{Store: store, Interval: time.Hour})
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
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.Handler(ctl, testToken))
	mux.Handle("/", web.Handler(ctl, testToken, web.Options{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f := &fixture{srv: srv}

	clash := "node opx does not compose: modules opxtypo2 and opxweb both claim web"
	for path, want := range map[string][]string{
		"/ui/status": {
			`data-status-node="opx" class="health-failing"`,
			`<span class="error compose-failed">failed `, ": " + clash + "</span>",
			`data-pending="opxtypo2"><small>opxtypo2 pending: the latest compose failed: ` + clash,
			`data-status-node="quiet" class="health-unknown"`,
		},
		"/ui/node?node=opx": {
			`badge health-failing`, `<p class="error compose-failed">last compose failed `, clash + "</p>",
			`<li data-pending="opxtypo2">opxtypo2 pending: the latest compose failed: ` + clash + "</li>",
		},
	} {
		res, body := f.get(t, path, testToken)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, res.StatusCode, body)
		}
		body = html.UnescapeString(body)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s does not contain %q:\n%s", path, w, body)
			}
		}
	}
}
