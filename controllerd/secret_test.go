package controllerd

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus/natstest"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events/export"
	"meshplane/events/memstore"
	"meshplane/render"
	"meshplane/secrets"
	"meshplane/web"
)

const (
	secretToken = "secret-test-token"
	firstValue  = "hunter2-first-Value"
	secondValue = "hunter2-second-Value"
)

// TestSecretReachesOnlyTheContainer: a secret set through the controller
// reaches, over the bus, the environment of the simulated node's container
// that reads it, and nothing else: the export, every API answer, the page
// and the plan hold neither value, before and after a rotation, which
// replaces the container (plan says so, why names the digest that changed).
func TestSecretReachesOnlyTheContainer(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)
	srv := natstest.Start(t)
	bc := natstest.Controller(t, srv)
	store := memstore.New()
	key, err := secrets.NewKey(bytes.Repeat([]byte{7}, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{Store: store, Publisher: bc.Publisher(), SecretKey: key, Interval: time.Hour, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- ctl.Run(runCtx) }()
	t.Cleanup(func() { stopRun(); <-done })
	stopDoor, err := consumeReports(ctx, bc, reportDoor{ctl: ctl, log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopDoor(context.Background()) })
	stopSecrets, err := serveSecrets(bc, ctl, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopSecrets(context.Background()) })

	rt := simruntime.New()
	link := natstest.Node(t, srv, "a").Agent()
	applied := make(chan agent.Report, 64)
	agentDone := make(chan error, 1)
	go func() {
		agentDone <- agent.Run(runCtx, agent.RunConfig{
			Node: "a", Runtime: rt, Outbox: agent.NewMemOutbox(), Source: link, Reporter: link, DryRuns: link, Secrets: link,
			Interval: time.Hour, Logger: log, Applied: func(r agent.Report) { applied <- r },
		})
	}()
	t.Cleanup(func() { stopRun(); <-agentDone })

	// A local controller over the same store with no bus: what mesh secret
	// set and mesh plan do on the data directory (nothing pushed).
	local, err := controller.New(controller.Config{Store: store, SecretKey: key, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.Handler(ctl, secretToken))
	mux.Handle("/", web.Handler(ctl, secretToken, web.Options{}))
	page := httptest.NewServer(mux)
	t.Cleanup(page.Close)
	client, err := httpapi.NewClient(page.URL, secretToken)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := client.SetSecret(ctx, api.SetSecretRequest{Operator: "ana", Name: "forge-db", Value: firstValue}); err != nil {
		t.Fatal(err)
	}
	_, spec, err := commands.ParseModuleFile("forge.yaml", []byte("module: forge\ncontainers:\n  - name: web\n    image: forge:1\n    env: {LOG: info, DB_PASSWORD: {secret: forge-db}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "ana", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.DefineModules(ctx, api.DefineModulesRequest{Operator: "ana", Modules: []api.ModuleDefinition{{Module: "forge", Spec: spec}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Assign(ctx, api.ModuleNodeRequest{Operator: "ana", Module: "forge", Node: "a"}); err != nil {
		t.Fatal(err)
	}
	waitEnv(t, rt, applied, "DB_PASSWORD="+firstValue)
	noValue(t, ctx, store, local, page.URL, firstValue)

	// The rotation, locally: a secret.set and forge defined again; plan
	// shows web replaced for the secret's digest, and holds no value.
	if _, err := local.SetSecret(ctx, api.SetSecretRequest{Operator: "ana", Name: "forge-db", Value: secondValue}); err != nil {
		t.Fatal(err)
	}
	plan, err := local.Plan(ctx, api.PlanRequest{Nodes: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var planOut bytes.Buffer
	if err := render.Plan(&planOut, render.Table, plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(planOut.String(), "web") || !strings.Contains(planOut.String(), "secret.DB_PASSWORD") {
		t.Errorf("the plan after a rotation does not replace web for its secret:\n%s", planOut.String())
	}
	noValue(t, ctx, store, local, page.URL, secondValue)

	if _, err := ctl.PushChanged(ctx); err != nil {
		t.Fatal(err)
	}
	waitEnv(t, rt, applied, "DB_PASSWORD="+secondValue)
	noValue(t, ctx, store, local, page.URL, firstValue)
	noValue(t, ctx, store, local, page.URL, secondValue)
	why := get(t, page.URL+"/v1/nodes/a/why?resource=web")
	if !strings.Contains(why, "secret.DB_PASSWORD") || !strings.Contains(why, "forge-db hmac-sha256:") {
		t.Errorf("why web does not name the secret's digest change:\n%s", why)
	}
}

// waitEnv waits for an apply after which web's environment holds want.
func waitEnv(t *testing.T, rt *simruntime.Runtime, applied <-chan agent.Report, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if slices.Contains(rt.Env("web"), want) {
			return
		}
		select {
		case rep := <-applied:
			if strings.Contains(rep.Summary(), "failed") {
				t.Logf("apply: %s %+v", rep.Summary(), rep.Outcome.Failed)
			}
		case <-deadline:
			t.Fatalf("web's environment is %q, want %q in it", rt.Env("web"), want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// noValue greps the export, the API's answers, the page and the plan for
// value.
func noValue(t *testing.T, ctx context.Context, store *memstore.Store, local *controller.Controller, url, value string) {
	t.Helper()
	var exp bytes.Buffer
	if _, err := export.Write(ctx, store, 0, &exp, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(exp.String(), `"secret.set"`) {
		t.Fatalf("the export holds no secret.set:\n%s", exp.String())
	}
	where := map[string]string{"export": exp.String()}
	for _, p := range []string{
		"/v1/nodes", "/v1/nodes/a", "/v1/nodes/a/resources", "/v1/nodes/a/roster", "/v1/nodes/a/roster/history",
		"/v1/nodes/a/why?resource=web", "/v1/timeline", "/v1/inventory/modules", "/v1/modules/forge", "/v1/secrets",
		"/", "/ui/status", "/ui/node?node=a", "/ui/why?node=a&resource=web",
	} {
		where[p] = get(t, url+p)
	}
	plan, err := local.Plan(ctx, api.PlanRequest{Nodes: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = render.Plan(&b, render.Table, plan)
	_ = render.Plan(&b, render.JSON, plan)
	where["plan"] = b.String()
	for w, body := range where {
		if strings.Contains(body, value) {
			t.Errorf("%s holds the secret's value", w)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secretToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return string(b)
}
