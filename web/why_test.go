package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/events"
	"meshplane/web"
)

// whyOnly answers Why with a fixed answer; the page's other queries are
// not asked here.
type whyOnly struct {
	web.Queries
	resp api.WhyResponse
}

func (q whyOnly) Why(context.Context, api.WhyRequest) (api.WhyResponse, error) { return q.resp, nil }

// TestWhyPanelTellsTheWholeChange: the page's why panel shows what mesh
// why does: each changed field with its old and new value, the commands
// behind the change with their actor and time, and the build and deploy
// (each once).
func TestWhyPanelTellsTheWholeChange(t *testing.T) {
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	deployed := api.Entry{Position: 26, Type: events.TypeModuleDeployed, Summary: "forge deployed", Actor: "operator:jo", At: at.Add(-time.Minute)}
	resp := api.WhyResponse{Node: "novox", Resource: "forge-web", Touches: []api.WhyTouch{{
		Touch: api.Touch{Entry: api.Entry{Position: 30, At: at, Node: "novox", Declaration: "novox/4"}, Action: "replaced",
			Fields: []string{"env.GREETING", "mounts./data"}},
		Changes: []api.Change{{Field: "env.GREETING", From: "hello", To: "bonjour"}, {Field: "mounts./data", From: "", To: "/srv/forge"}},
		Commands: []api.Entry{
			{Position: 24, Type: events.TypeModuleDefined, Summary: "module forge defined", Actor: "operator:ana", At: at.Add(-3 * time.Minute)},
			deployed,
		},
		Deploy: []api.Entry{{Position: 25, Type: events.TypeArtifactRecorded, Summary: "artifact forge/web recorded", Actor: "operator:jo", At: at.Add(-2 * time.Minute)}, deployed},
	}}}
	srv := httptest.NewServer(web.Handler(whyOnly{resp: resp}, testToken, web.Options{}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/ui/why?node=novox&resource=forge-web", nil)
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
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v: %s", res.StatusCode, err, b)
	}
	body := string(b)
	for _, want := range []string{
		"<code>env.GREETING</code>: hello → bonjour", "<code>mounts./data</code>: (none) → /srv/forge",
		"#24 module.defined: module forge defined <span class=\"muted\">(operator:ana, 2026-11-30T10:57:00Z)</span>",
		"#25 artifact.recorded: artifact forge/web recorded", "#26 module.deployed: forge deployed <span class=\"muted\">(operator:jo, 2026-11-30T10:59:00Z)</span>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the why panel does not show %q:\n%s", want, body)
		}
	}
	if n := strings.Count(body, "#26 module.deployed"); n != 1 {
		t.Errorf("the deploy is shown %d times, want once", n)
	}
}

// TestWhyPanelListsEachTouchsOwnApplies: two touches of one declaration
// (a replace, then a restart found later) share the push's correlation,
// and the answer's Push of each names the other's apply; the panel lists
// under each touch the push behind it and its own applies only, never
// the other touch's.
func TestWhyPanelListsEachTouchsOwnApplies(t *testing.T) {
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	compose := api.Entry{Position: 28, Type: events.TypeDeclarationComposed, Summary: "composed novox/4", Declaration: "novox/4"}
	push := api.Entry{Position: 29, Type: events.TypeDeclarationPushed, Summary: "pushed novox/4", Declaration: "novox/4"}
	apply := func(pos uint64, summary string) api.Entry {
		return api.Entry{Position: pos, Type: events.TypeApplyReported, Summary: summary, Declaration: "novox/4", Correlation: "c-4", Node: "novox", At: at.Add(time.Duration(pos) * time.Minute)}
	}
	first, second := apply(30, "apply-thirty replaced 1"), apply(40, "apply-forty updated 1")
	resp := api.WhyResponse{Node: "novox", Resource: "forge-web", Touches: []api.WhyTouch{
		{Touch: api.Touch{Entry: first, Action: "replaced", Fields: []string{"image"}}, Push: []api.Entry{compose, push, second}},
		{Touch: api.Touch{Entry: second, Action: "updated", Reason: "found stopped"}, Push: []api.Entry{compose, push, first}},
	}}
	srv := httptest.NewServer(web.Handler(whyOnly{resp: resp}, testToken, web.Options{}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/ui/why?node=novox&resource=forge-web", nil)
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
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v: %s", res.StatusCode, err, b)
	}
	// Newest first: the touch of #40, then the touch of #30.
	_, touches, ok := strings.Cut(string(b), `<ol class="touches">`)
	items := strings.Split(touches, "<li><strong>")
	if !ok || len(items) != 3 {
		t.Fatalf("want two touches listed:\n%s", b)
	}
	for _, c := range []struct {
		item        string
		own, others string
	}{
		{items[1], "apply #40", "apply-thirty"},
		{items[2], "apply #30", "apply-forty"},
	} {
		if strings.Contains(c.item, c.others) {
			t.Errorf("the touch of %s lists the other touch's apply %q:\n%s", c.own, c.others, c.item)
		}
		for _, want := range []string{"composed novox/4", "pushed novox/4"} {
			if !strings.Contains(c.item, want) {
				t.Errorf("the touch of %s does not list its push's %q:\n%s", c.own, want, c.item)
			}
		}
	}
}
