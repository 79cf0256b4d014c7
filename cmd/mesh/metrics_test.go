package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/events"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// scrape GETs url with token ("" for none) and returns the status and body.
func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// sample finds the value of the sample named exactly name (with its
// labels) in a text exposition.
func sample(body, name string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestDaemonMetrics: mesh up serves /metrics beside the API, behind its
// token, and counts what the store holds; an agent with --metrics serves
// its own.
func TestDaemonMetrics(t *testing.T) {
	ctx := context.Background()
	d := meshtest.StartDaemon(t, t.TempDir(), "")
	meshtest.DaemonSetUp(t, d.Client, []string{"n1"})
	agentAt := "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	n1 := meshtest.StartNode(t, d.Creds(t, "n1"), t.TempDir(), func(c *agentd.Config) { c.Metrics = agentAt })
	if _, err := d.Client.Push(ctx, api.PushRequest{Operator: meshtest.TestOperator}); err != nil {
		t.Fatal(err)
	}
	meshtest.InSync(t, d.Client, "n1")

	url := d.Ready.APIURL + "/metrics"
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"another token", "nope", http.StatusUnauthorized},
		{"the API token", d.Ready.Token, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := scrape(t, url, tc.token); code != tc.status {
				t.Fatalf("status %d, want %d\n%s", code, tc.status, body)
			}
		})
	}

	// Every event the store holds, counted by type (the controller
	// started on an empty store), as the timeline lists them.
	page, err := d.Client.Timeline(ctx, api.TimelineRequest{Limit: api.MaxTimelineLimit})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, e := range page.Entries {
		want[e.Type]++
	}
	if want[events.TypeDeclarationPushed] == 0 || want[events.TypeApplyReported] == 0 {
		t.Fatalf("the timeline has no push or apply: %v", want)
	}
	testwait.Eventually(t, 20*time.Second, func() error {
		_, body := scrape(t, url, d.Ready.Token)
		for typ, n := range want {
			name := fmt.Sprintf("meshplane_events_appended_total{type=%q}", typ)
			if got, ok := sample(body, name); !ok || got != float64(n) {
				return fmt.Errorf("%s = %v (found: %v), want %d", name, got, ok, n)
			}
		}
		if got, _ := sample(body, `meshplane_pushes_total{result="pushed"}`); got != float64(want[events.TypeDeclarationPushed]) {
			return fmt.Errorf("pushed = %v, want %d", got, want[events.TypeDeclarationPushed])
		}
		if got, ok := sample(body, "meshplane_projection_lag_events"); !ok || got != 0 {
			return fmt.Errorf("projection lag %v (found: %v), want 0", got, ok)
		}
		return nil
	})

	// The agent's own.
	testwait.Eventually(t, 20*time.Second, func() error {
		code, body := scrape(t, "http://"+agentAt+"/metrics", "")
		if code != http.StatusOK {
			return fmt.Errorf("agent metrics: status %d", code)
		}
		applies := len(n1.Applies())
		if got, _ := sample(body, `meshplane_agent_applies_total{node="n1"}`); got != float64(applies) || applies == 0 {
			return fmt.Errorf("agent applies = %v, the agent made %d", got, applies)
		}
		if got, ok := sample(body, `meshplane_agent_outbox_depth{node="n1"}`); !ok || got != 0 {
			return fmt.Errorf("outbox depth %v (found: %v), want 0 once delivered", got, ok)
		}
		if _, ok := sample(body, `meshplane_agent_bus_errors_total{node="n1"}`); !ok {
			return fmt.Errorf("no bus errors counter")
		}
		return nil
	})
}
