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
