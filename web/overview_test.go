package web_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/web"
)

// manyNodes answers the overview's queries for a mesh of n nodes, node-000
// …: each runs module mod-(i%7) with containers c0 and c1, running and
// converged, except those named in odd (their health) and containers (a
// container's state, as the engine would say it).
type manyNodes struct {
	web.Queries
	n          int
	odd        map[string]string // node → health
	pending    map[string]bool   // node → a module pending
	containers map[string]string // node → state of its c1
}

func (q manyNodes) Info(context.Context) (api.Info, error) {
	return api.Info{Role: api.RoleLeader, Version: "test", Interval: "1m0s"}, nil
}

func (q manyNodes) module(i int) string { return fmt.Sprintf("mod-%d", i%7) }

func (q manyNodes) Status(context.Context, api.StatusRequest) (api.StatusResponse, error) {
	var out api.StatusResponse
	for i := range q.n {
		name := fmt.Sprintf("node-%03d", i)
		ns := api.NodeStatus{Node: name, Sync: "in-sync", Health: "converged",
			Modules: map[string]api.ModuleStatus{q.module(i): {Assigned: true, Taken: true, State: "converged"}}}
		if h, ok := q.odd[name]; ok {
			ns.Health = h
			ns.Modules[q.module(i)] = api.ModuleStatus{Assigned: true, State: h}
		}
		if q.pending[name] {
			ns.Modules["late"] = api.ModuleStatus{Assigned: true, State: "pending", Reason: "not composed yet"}
		}
		out.Nodes = append(out.Nodes, ns)
	}
	return out, nil
}

func (q manyNodes) Resources(_ context.Context, node string) (api.NodeResources, error) {
	var i int
	if _, err := fmt.Sscanf(node, "node-%d", &i); err != nil {
		return api.NodeResources{}, err
	}
	c1 := "running"
	if s, ok := q.containers[node]; ok {
		c1 = s
	}
	m := q.module(i)
	return api.NodeResources{Node: node, Resources: []api.ResourceState{
		{Name: m + "-c0", Kind: "container", Module: m, State: "running"},
		{Name: m + "-c1", Kind: "container", Module: m, State: c1},
		{Name: "/var/lib/" + m, Kind: "directory", Module: m, State: "in-place"},
	}}, nil
}

func newManyNodes(t *testing.T) *httptest.Server {
	t.Helper()
	q := manyNodes{n: 1000,
		odd: map[string]string{"node-700": "failing", "node-350": "churning", "node-120": "waiting-on-take",
			"node-999": "unknown", "node-500": "stuck-somehow"},
		pending:    map[string]bool{"node-016": true},
		containers: map[string]string{"node-700": "crash-looping", "node-701": "starting", "node-702": "unhealthy"},
	}
	srv := httptest.NewServer(web.Handler(q, testToken, web.Options{}))
	t.Cleanup(srv.Close)
	return srv
}

func getFragment(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

var rowRE = regexp.MustCompile(`<tr data-status-node="([^"]+)"`)

// rowsOf is the nodes of an overview fragment, in its order.
func rowsOf(body string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestOverviewAtAThousandNodes: the overview of a thousand nodes is one
// page of them, what is wrong first, with every node counted by state
// above it; the filter narrows by state, module and name; the pages cover
// the nodes; each row shows its modules and containers with their states,
// styled by kind, a state the page does not know shown as it is.
func TestOverviewAtAThousandNodes(t *testing.T) {
	srv := newManyNodes(t)
	cases := []struct {
		name, query string
		rows        int      // rows on the page
		first       []string // the page's first rows, in order
		all         string   // every row's node contains this
		want        []string // in the fragment (unescaped)
	}{
		{"what is wrong first", "", web.StatusPageSize,
			[]string{"node-700", "node-350", "node-999", "node-120", "node-500", "node-016", "node-000"}, "node-",
			[]string{
				`data-status-state="failing" data-count="1">1 failing</button>`,
				`data-status-state="converged" data-count="995">995 converged</button>`,
				`data-status-state="stuck-somehow" data-count="1">1 stuck-somehow</button>`,
				`data-status-state="pending" data-count="1">1 with a module pending</button>`,
				"Nodes 1–50 of 1000, what is wrong first.", "page 1 of 20",
				`<span class="ct" data-container="mod-0-c1">mod-0-c1 <span class="st sk-fail" data-state="crash-looping">crash-looping</span></span>`,
				`<span class="st sk-ok" data-state="running">running</span>`,
				`<span class="st sk-warn" data-state="pending">pending</span>`,
			}},
		{"a state", "?state=failing", 1, []string{"node-700"}, "node-700",
			[]string{"Nodes 1–1 of 1 matching state failing (1000 in all)", `class="count sk-fail chosen" data-status-state="failing"`}},
		{"anything wrong", "?state=wrong", 6, []string{"node-700", "node-350", "node-999", "node-120", "node-500", "node-016"}, "node-", nil},
		{"a module pending", "?state=pending", 1, []string{"node-016"}, "node-016", nil},
		{"a state the page does not know", "?state=stuck-somehow", 1, []string{"node-500"}, "node-500", nil},
		{"a module", "?module=mod-3&page=3", 43, []string{"node-703", "node-710"}, "node-",
			[]string{"Nodes 101–143 of 143 matching module mod-3 (1000 in all)", "page 3 of 3", `data-status-page="2">← previous`}},
		{"a name", "?name=NODE-70", 10, []string{"node-700", "node-701", "node-702", "node-703"}, "node-70", nil},
		{"a later page", "?page=2", web.StatusPageSize, []string{"node-045", "node-046"}, "node-",
			[]string{"Nodes 51–100 of 1000", `data-status-page="1">← previous`, `data-status-page="3">next →`}},
		{"past the last page", "?page=9999", web.StatusPageSize, []string{"node-949"}, "node-", []string{"Nodes 951–1000 of 1000", "page 20 of 20"}},
		{"containers as the engine says", "?name=node-70&state=converged", 9, []string{"node-701", "node-702"}, "node-70",
			[]string{
				`data-container="mod-1-c1">mod-1-c1 <span class="st sk-neutral" data-state="starting">starting</span>`,
				`data-container="mod-2-c1">mod-2-c1 <span class="st sk-fail" data-state="unhealthy">unhealthy</span>`,
			}},
		{"nothing matches", "?name=nobody", 0, nil, "", []string{"No node matches the filter."}},
		{"hostile filter", "?name=%3Cscript%3E", 0, nil, "", []string{"name “&lt;script&gt;”", "No node matches"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := getFragment(t, srv, "/ui/status"+c.query)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			rows := rowsOf(body)
			if len(rows) != c.rows {
				t.Errorf("%d rows, want %d: %v", len(rows), c.rows, rows)
			}
			for i, n := range c.first {
				if i >= len(rows) || rows[i] != n {
					t.Errorf("row %d is %v, want %s (rows %v)", i+1, rows[min(i, len(rows)-1):min(i+1, len(rows))], n, rows)
					break
				}
			}
			for _, r := range rows {
				if !strings.Contains(r, c.all) {
					t.Errorf("row %s does not match %q", r, c.all)
				}
			}
			plain := html.UnescapeString(body)
			if c.name == "hostile filter" {
				plain = body
			}
			for _, w := range c.want {
				if !strings.Contains(plain, w) {
					t.Errorf("the fragment does not contain %q:\n%s", w, cut(plain))
				}
			}
		})
	}
	// Every node on exactly one page.
	seen := map[string]int{}
	for p := 1; p <= 20; p++ {
		_, body := getFragment(t, srv, fmt.Sprintf("/ui/status?page=%d", p))
		for _, r := range rowsOf(body) {
			seen[r]++
		}
	}
	if len(seen) != 1000 {
		t.Errorf("the pages show %d nodes, want 1000", len(seen))
	}
	for n, k := range seen {
		if k != 1 {
			t.Errorf("%s is on %d pages", n, k)
		}
	}
	// The fragment of a page is small however many nodes there are.
	_, body := getFragment(t, srv, "/ui/status")
	if len(body) > 64<<10 {
		t.Errorf("the overview's fragment is %d bytes at 1,000 nodes, want at most 64 KiB", len(body))
	}
	t.Logf("the overview's fragment at 1,000 nodes: %d bytes", len(body))
}

// TestOverviewRefusesBadQueries: a page that is not a page number, or a
// filter longer than any name, is a 400 naming what was wrong.
func TestOverviewRefusesBadQueries(t *testing.T) {
	srv := newManyNodes(t)
	for _, c := range []struct{ query, want string }{
		{"?page=0", `page "0": want a page number from 1`},
		{"?page=two", `page "two": want a page number from 1`},
		{"?name=" + strings.Repeat("x", 201), "name: at most 200 bytes"},
		{"?module=" + strings.Repeat("x", 201), "module: at most 200 bytes"},
	} {
		code, body := getFragment(t, srv, "/ui/status"+c.query)
		if code != http.StatusBadRequest || !strings.Contains(html.UnescapeString(body), c.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", cut(c.query), code, body, c.want)
		}
	}
}

func cut(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}
