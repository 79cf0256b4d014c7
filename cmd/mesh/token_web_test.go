package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
)

// TestProcessTokenPageAndMetrics: against a running mesh up, a token made
// by mesh token create is taken by the page's fragments, its event stream
// and /metrics, as by the API; mesh token revoke ends the event stream it
// holds at once, and from then on the page and /metrics refuse it (401
// naming the revocation), while the bootstrap token is still taken.
func TestProcessTokenPageAndMetrics(t *testing.T) {
	data := t.TempDir()
	c := meshtest.StartCtl(t, data, freeport.Addr(t), freeport.Addr(t))
	defer c.Stop(t)
	boot := append(c.Env(), "MESH_OPERATOR=root")
	meshtest.MustCLI(t, boot, "node", "register", "n1")
	secret := strings.TrimSpace(meshtest.MustCLI(t, boot, "token", "create", "carol"))
	if !strings.HasPrefix(secret, "mtk_") {
		t.Fatalf("token create printed %q", secret)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	get := func(path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
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
	for _, tc := range []struct{ path, contains string }{
		{"/ui/status", `data-status-node="n1"`},
		{"/metrics", "meshplane_events_appended_total"},
		{"/v1/info", `"role":"leader"`},
	} {
		if code, body := get(tc.path, secret); code != http.StatusOK || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s with carol's token: %d, want 200 containing %q\n%.400s", tc.path, code, tc.contains, body)
		}
		if code, _ := get(tc.path, "mtk_nosuchtoken"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with an unknown token: %d, want 401", tc.path, code)
		}
	}

	// The event stream, held with carol's token while it is revoked.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /ui/events with carol's token: %d", res.StatusCode)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		rd := bufio.NewReader(res.Body)
		for {
			l, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	for l := range lines {
		if strings.HasPrefix(l, "event: position") {
			break
		}
	}

	revokedAt := time.Now()
	meshtest.MustCLI(t, boot, "token", "revoke", "carol")
	ended := time.After(5 * time.Second)
wait:
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				break wait
			}
		case <-ended:
			t.Fatal("the event stream held with carol's token still runs 5s after its revocation")
		}
	}
	t.Logf("the stream ended %v after the revoke verb started", time.Since(revokedAt).Round(time.Millisecond))

	for _, path := range []string{"/ui/status", "/ui/events", "/metrics", "/v1/info"} {
		if code, body := get(path, secret); code != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
			t.Errorf("GET %s with carol's revoked token: %d, want 401 naming the revocation\n%.400s", path, code, body)
		}
	}
	for _, path := range []string{"/ui/status", "/metrics"} {
		if code, _ := get(path, c.Token); code != http.StatusOK {
			t.Errorf("GET %s with the bootstrap token after the revocation: %d, want 200", path, code)
		}
	}
}
