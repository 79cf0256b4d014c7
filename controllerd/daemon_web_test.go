package controllerd_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/internal/meshtest"
)

// TestDaemonServesThePage: the controller serves the page at / beside the
// API, under the API's token, and stops cleanly (and at once) while a page
// follows its event stream.
func TestDaemonServesThePage(t *testing.T) {
	d := meshtest.StartDaemon(t, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: meshtest.TestOperator, Nodes: []string{"n1"}}); err != nil {
		t.Fatal(err)
	}
	get := func(path, token string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Ready.APIURL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
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
	for _, tc := range []struct {
		name, path, token string
		status            int
		contains          string
	}{
		{"the page, without a token", "/", "", 200, `id="token"`},
		{"its script", "/static/app.js", "", 200, "sessionStorage"},
		{"a fragment without the token", "/ui/status", "", 401, ""},
		{"a fragment with the token", "/ui/status", d.Ready.Token, 200, `data-status-node="n1"`},
		{"the API, as before", "/v1/info", d.Ready.Token, 200, `"role":"leader"`},
		{"the API without the token", "/v1/info", "", 401, "unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(tc.path, tc.token)
			if res.StatusCode != tc.status {
				t.Fatalf("GET %s: %d, want %d: %s", tc.path, res.StatusCode, tc.status, body)
			}
			if !strings.Contains(body, tc.contains) {
				t.Errorf("GET %s does not contain %q: %s", tc.path, tc.contains, body)
			}
		})
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Ready.APIURL+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Ready.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the event stream: %v", err)
		}
		if strings.HasPrefix(line, "event: position") {
			break
		}
	}
	// The stream is open: the controller stops cleanly all the same
	// (stop fails the test on an error, such as a shutdown that timed out
	// waiting for the stream), and the stream ends.
	d.Stop(t)
	if _, err := io.Copy(io.Discard, rd); err != nil && ctx.Err() != nil {
		t.Fatalf("the stream did not end with the controller: %v", err)
	}
}
