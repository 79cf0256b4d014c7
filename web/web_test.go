package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTokenGuardsEveryFragment(t *testing.T) {
	f := newFixture(t)
	paths := []string{
		"/ui/status",
		"/ui/node?node=novox",
		"/ui/diff?node=control&from=control/101&to=control/102",
		"/ui/why?node=novox&resource=ca",
		"/ui/events",
	}
	for _, p := range paths {
		for _, tok := range []string{"", "wrong", testToken + "x"} {
			t.Run(p+" token "+strconv.Quote(tok), func(t *testing.T) {
				res, body := f.get(t, p, tok)
				if res.StatusCode != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401", res.StatusCode)
				}
				if strings.Contains(body, "novox") || strings.Contains(body, "route-proxy") {
					t.Errorf("a refused request answered data: %q", body)
				}
			})
		}
	}
}

func TestPageAndAssetsNeedNoToken(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		path, contentType, contains string
	}{
		{"/", "text/html", `id="token"`},
		{"/static/app.js", "javascript", "sessionStorage"},
		{"/static/app.css", "text/css", ".band"},
		{"/static/icon.svg", "image/svg+xml", "<svg"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			res, body := f.get(t, tc.path, "")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", res.StatusCode)
			}
			if ct := res.Header.Get("Content-Type"); !strings.Contains(ct, tc.contentType) {
				t.Errorf("Content-Type %q, want %s", ct, tc.contentType)
			}
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if !strings.Contains(body, tc.contains) {
				t.Errorf("body does not contain %q", tc.contains)
			}
			// Offline machines: nothing may come from another origin.
			if regexp.MustCompile(`(src|href)="https?://`).MatchString(body) {
				t.Errorf("%s loads something from another origin", tc.path)
			}
		})
	}
	t.Run("the API is still the API", func(t *testing.T) {
		res, body := f.get(t, "/v1/info", testToken)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, `"role"`) {
			t.Fatalf("GET /v1/info: %d %s", res.StatusCode, body)
		}
		if res, _ := f.get(t, "/v1/info", ""); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /v1/info without a token: %d, want 401", res.StatusCode)
		}
	})
}

func TestFragments(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		path   string
		status int
		want   []string
	}{
		{"status shows every node and seed 002's holds", "/ui/status", 200, []string{
			`data-status-node="novox"`, `data-status-node="g14"`, `data-status-node="control"`,
			"waiting-on-take", `data-held-total="2">route-proxy: 2<`,
			"applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)",
		}},
		{"seed 000's churn band and its evidence", "/ui/node?node=control", 200, []string{
			`class="band"`, "churn loop and flip: 5 heavy passes, 3 flips",
			`data-episode="ep-0"`, `<strong>node g14</strong>: read node g14: FATAL: the database system is not yet accepting connections`,
			"<code>hosts</code>: 30 resource(s)", "<li>searxng.zurag.be</li>",
			`data-diff-from="control/101" data-diff-to="control/102"`,
			`data-lane="failed composes"`, `class="m compose-failed"`,
			`data-replaced="6"`,
		}},
		{"seed 002's held counts, and idle passes as one span", "/ui/node?node=novox", 200, []string{
			`data-created="2" data-replaced="0" data-held="2"`, "held 2",
			`class="m apply idle span"`, "nothing changed ×2 · held 2",
		}},
		{"roster diff", "/ui/diff?node=control&from=control/101&to=control/102", 200, []string{
			"control/101 → control/102", "− searxng.zurag.be", "~ mesh-store",
		}},
		{"why", "/ui/why?node=novox&resource=ca", 200, []string{
			"<strong>held</strong>", "would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken",
		}},
		{"an unknown node", "/ui/node?node=nope", 404, []string{"nope"}},
		{"an unknown declaration", "/ui/diff?node=control&from=control/1&to=control/102", 404, []string{"control/1"}},
		{"no node", "/ui/node", 400, []string{"want node"}},
		{"a cursor that is no position", "/ui/node?node=novox&before=x", 400, []string{"before"}},
		{"too large a page", "/ui/node?node=novox&limit=100000", 400, []string{"limit"}},
		{"a diff without its ends", "/ui/diff?node=control&from=control/101", 400, []string{"want to"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, body := f.get(t, tc.path, testToken)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s does not contain %q", tc.path, w)
				}
			}
		})
	}
}

// TestPagesCoverTheTimelineOnce pages a node's lanes back from the latest,
// three entries at a time, and checks that the pages meet without a gap or
// an overlap and end at the first entry.
func TestPagesCoverTheTimelineOnce(t *testing.T) {
	f := newFixture(t)
	head := regexp.MustCompile(`data-latest="(\w+)" data-first="(\d+)" data-last="(\d+)"`)
	columns := regexp.MustCompile(`<td title="[^"]* · position (\d+)">`)
	var seen []uint64
	path := "/ui/node?node=control&limit=3"
	for page := 0; ; page++ {
		if page > 50 {
			t.Fatal("more than 50 pages of 3")
		}
		res, body := f.get(t, path, testToken)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, body)
		}
		m := head.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("%s: no page head", path)
		}
		if latest := m[1] == "true"; latest != (page == 0) {
			t.Errorf("page %d says latest=%v", page, latest)
		}
		var ps []uint64
		for _, c := range columns.FindAllStringSubmatch(body, -1) {
			p, _ := strconv.ParseUint(c[1], 10, 64)
			ps = append(ps, p)
		}
		seen = append(ps, seen...)
		older := regexp.MustCompile(`data-before="(\d+)"`).FindStringSubmatch(body)
		if older == nil {
			break
		}
		if older[1] != m[2] {
			t.Errorf("page %d: older cursor %s, want its first position %s", page, older[1], m[2])
		}
		path = "/ui/node?node=control&limit=3&before=" + older[1]
	}
	_, all := f.get(t, "/ui/node?node=control&limit=1000", testToken)
	var want []uint64
	for _, c := range columns.FindAllStringSubmatch(all, -1) {
		p, _ := strconv.ParseUint(c[1], 10, 64)
		want = append(want, p)
	}
	if len(seen) != len(want) {
		t.Fatalf("pages showed positions %v, one page of all shows %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("pages showed positions %v, one page of all shows %v", seen, want)
		}
	}
}

// TestEventsAnnounceNewPositions reads the event stream: the position at
// once, then a later one after a pass appends events.
func TestEventsAnnounceNewPositions(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	rd := bufio.NewReader(res.Body)
	next := func() uint64 {
		t.Helper()
		var typ, id, data string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && data != "":
				if typ != "position" {
					t.Fatalf("event %q, want position", typ)
				}
				var d struct{ Position uint64 }
				if err := json.Unmarshal([]byte(data), &d); err != nil {
					t.Fatalf("data %q: %v", data, err)
				}
				if id != strconv.FormatUint(d.Position, 10) {
					t.Errorf("id %q, data position %d", id, d.Position)
				}
				return d.Position
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
	}
	head, err := f.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := next(); got != head {
		t.Fatalf("first event at %d, want the head %d", got, head)
	}
	if _, _, err := f.mesh.Pass(ctx, "novox"); err != nil {
		t.Fatal(err)
	}
	after, err := f.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after <= head {
		t.Fatalf("the pass appended nothing (head %d)", after)
	}
	for got := next(); got < after; got = next() {
		if got <= head {
			t.Fatalf("event at %d after one at %d", got, head)
		}
	}
}
