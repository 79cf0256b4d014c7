package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// testToken is the API token of the test controllers.
const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// clock is the fixture's clock: a second per reading, from where it is set.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(time.Second)
	return t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// fixture is a controller over a store holding two seeds' incidents, served
// as the daemon serves it: the API at /v1, the page at /.
type fixture struct {
	mesh  *sim.Mesh
	clock *clock
	store events.Store
	ctl   *controller.Controller
	srv   *httptest.Server
}

// The seed-000 node: its declarations flip between a roster with and one
// without the other node's routed name, and every container is replaced
// each pass.
const (
	churnNode   = "control"
	churnModule = "mesh-core"
	flipName    = "searxng.zurag.be"
)

var churnContainers = []string{"mesh-store", "mesh-bus", "forge", "directory", "mail", "edge-proxy"}

// newFixture builds the store, then starts a controller on it and serves it.
//
//   - seed 002 (the worked count of docs/scenario-steps.md) on "novox": adopted, route-proxy
//     with containers proxy, ca, acme, ca mounting /var/lib/route-proxy/ca
//     which is found on disk, assigned and not taken; three passes, each
//     "applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)",
//     the last two idle (one span);
//   - "g14" serves searxng.zurag.be;
//   - seed 000's incident on "control", replayed from its event stream as
//     the seed tells it (22:46 to 23:11): five passes whose declarations
//     alternate between a roster with searxng.zurag.be and one without
//     (after a failed read of node g14), each replacing every container,
//     then two quiet passes that end the episode.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	clk := &clock{t: sim.Epoch}
	m := sim.New(store, sim.WithClock(clk.Now))
	do := func(c commands.Command) {
		t.Helper()
		if err := m.Do(ctx, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	for _, n := range []string{"novox", "g14", churnNode} {
		if _, err := m.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	do(commands.AdoptNode{Node: "novox"})
	do(commands.DefineModule{Module: "searxng", Spec: events.ModuleSpec{
		Containers: []events.ContainerSpec{{Name: "searxng", Image: "scenario.invalid/searxng:1"}},
		Routes:     []string{flipName},
	}})
	do(commands.DefineModule{Module: "route-proxy", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{
		{Name: "proxy", Image: "scenario.invalid/route-proxy/proxy:1"},
		{Name: "ca", Image: "scenario.invalid/route-proxy/ca:1", Mounts: []events.Mount{{Source: "/var/lib/route-proxy/ca"}}},
		{Name: "acme", Image: "scenario.invalid/route-proxy/acme:1"},
	}}})
	novox, err := m.Node("novox")
	if err != nil {
		t.Fatal(err)
	}
	if err := novox.Runtime.MakeDirectory("/var/lib/route-proxy/ca", 0o755); err != nil {
		t.Fatal(err)
	}
	do(commands.AssignModule{Module: "searxng", Node: "g14"})
	do(commands.AssignModule{Module: "route-proxy", Node: "novox"})
	pass := func(node string) {
		t.Helper()
		if _, _, err := m.Pass(ctx, node); err != nil {
			t.Fatalf("pass on %s: %v", node, err)
		}
	}
	pass("g14")
	for range 3 {
		pass("novox")
	}
	if err := m.AppendJSONLines(ctx, seed000Lines(t)); err != nil {
		t.Fatal(err)
	}
	clk.Set(time.Date(2026, 9, 29, 23, 20, 0, 0, time.UTC))

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
	t.Cleanup(func() { close(streams) }) // before srv.Close: streams end first
	return &fixture{mesh: m, clock: clk, store: store, ctl: ctl, srv: srv}
}

// seed000Lines is seed 000's incident as JSON lines on the churning node's
// stream (the public payloads of docs/design.md), in the seed's times.
func seed000Lines(t *testing.T) [][]byte {
	t.Helper()
	start := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	roster := []string{"ace.internal", "drive.novox.be", "g14.internal", "keycloak.novox.be", "novox.internal",
		"office.novox.be", "portainer.novox.be", "shanks.internal", "umami.novox.be"}
	var lines [][]byte
	add := func(at time.Time, typ string, data map[string]any) {
		b, err := json.Marshal(map[string]any{"stream": "node-" + churnNode, "type": typ, "at": at.Format(time.RFC3339), "data": data})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	decl := func(i int) string { return fmt.Sprintf("%s/%d", churnNode, 101+i) }
	apply := func(at time.Time, d, digest string, replaced bool) {
		data := map[string]any{"node": churnNode, "declaration": d, "digest": digest, "sent": len(churnContainers), "applied": len(churnContainers)}
		if replaced {
			var rs []map[string]any
			for _, c := range churnContainers {
				rs = append(rs, map[string]any{"name": c, "fields": []string{"hosts"}})
			}
			data["replaced"], data["unchanged"] = rs, 0
		} else {
			data["unchanged"] = len(churnContainers)
		}
		add(at, events.TypeApplyReported, data)
	}
	var last, lastDigest string
	for i := range 5 {
		at := start.Add(time.Duration(i) * 5 * time.Minute)
		withName := i%2 == 0
		names, digest, salt := roster, "sha256:"+strings.Repeat("b", 64), "b"
		if withName {
			names, digest, salt = append(append([]string{}, roster...), flipName), "sha256:"+strings.Repeat("a", 64), "a"
		} else {
			add(at, events.TypeDeclarationComposeFailed, map[string]any{"node": churnNode, "read": "node g14",
				"error": "read node g14: FATAL: the database system is not yet accepting connections"})
		}
		var res []map[string]any
		for j, c := range churnContainers {
			res = append(res, map[string]any{"name": c, "kind": "container", "module": churnModule, "digest": fmt.Sprintf("sha256:%s%063d", salt, j)})
		}
		d := decl(i)
		add(at.Add(time.Second), events.TypeDeclarationComposed, map[string]any{"node": churnNode, "declaration": d, "digest": digest, "roster": names, "resources": res})
		add(at.Add(2*time.Second), events.TypeDeclarationPushed, map[string]any{"node": churnNode, "declaration": d, "digest": digest, "resources": len(res)})
		apply(at.Add(3*time.Minute), d, digest, true)
		last, lastDigest = d, digest
	}
	for i := range 2 {
		apply(start.Add(time.Duration(25+5*i)*time.Minute), last, lastDigest, false)
	}
	return lines
}

// get fetches path from the fixture's server with the token (or without,
// when token is "").
func (f *fixture) get(t *testing.T, path, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}
