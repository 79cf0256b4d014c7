package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events/boltstore"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// server is a controller over the store in a data directory, running, served
// by api.Handler on an httptest server: what the CLI's --server reaches.
// It holds the store's lock until stopped.
type server struct {
	url, tokenFile string
	store          *boltstore.Store
	ctrl           *controller.Controller
	stop           func()
}

func startServer(t *testing.T, dir string) *server {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Store: s, Clock: wallClock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	hs := httptest.NewServer(api.Handler(c, testToken))
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &server{url: hs.URL, tokenFile: tokenFile, store: s, ctrl: c}
	stopped := false
	srv.stop = func() {
		if stopped {
			return
		}
		stopped = true
		hs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		s.Close()
	}
	t.Cleanup(srv.stop)
	return srv
}

func (s *server) flags() []string { return []string{"--server", s.url, "--token-file", s.tokenFile} }

// mode is a way in: a local store, or the controller over it.
type mode struct {
	name  string
	start func(t *testing.T, dir string) (flags []string, stop func())
}

var modes = []mode{
	{"local", func(_ *testing.T, dir string) ([]string, func()) { return []string{"--data", dir}, func() {} }},
	{"remote", func(t *testing.T, dir string) ([]string, func()) {
		s := startServer(t, dir)
		return s.flags(), s.stop
	}},
}

// goldenCases runs each case in both modes over dir and compares each
// output with its golden file (written only by the local run under -update).
func goldenCases(t *testing.T, dir string, cases []goldenCase) {
	t.Helper()
	for _, m := range modes {
		if *update && m.name != "local" {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			flags, stop := m.start(t, dir)
			defer stop()
			for _, tc := range cases {
				if tc.localOnly && m.name != "local" {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					code, out, errOut := mesh(t, append(tc.args, flags...)...)
					if code != exitOK {
						t.Fatalf("exit %d\n%s%s", code, out, errOut)
					}
					if m.name == "remote" && tc.remoteGap != nil {
						out = tc.remoteGap(t, out)
					}
					golden(t, tc.name, out, dir)
				})
			}
		})
	}
}

type goldenCase struct {
	name      string
	args      []string
	localOnly bool
	// remoteGap, when set, maps the remote output to the local one: a
	// known gap of the wire, named where it is set. When the gap closes the
	// remote run fails, and the mapping goes.
	remoteGap func(*testing.T, string) string
}

// The timeline follows the pages' cursors: forward when it prints every
// match, back from the newest for --limit; the output is the same as one
// page's, in both modes.
func TestTimelinePages(t *testing.T) {
	dir := upExample(t)
	saved := timelinePage
	t.Cleanup(func() { timelinePage = saved })
	timelinePage = 3
	goldenCases(t, dir, []goldenCase{
		{"timeline-novox", []string{"timeline", "--node", "novox"}, false, nil},
		{"timeline-applies", []string{"timeline", "--type", "apply.reported", "--limit", "2"}, false, nil},
	})
	for _, m := range modes {
		t.Run(m.name+"/limit across pages", func(t *testing.T) {
			flags, stop := m.start(t, dir)
			defer stop()
			_, all, _ := mesh(t, append([]string{"timeline", "-o", "json", "--node", "novox"}, flags...)...)
			_, last7, _ := mesh(t, append([]string{"timeline", "-o", "json", "--node", "novox", "--limit", "7"}, flags...)...)
			var a, b []struct{ Position uint64 }
			mustJSON(t, all, &a)
			mustJSON(t, last7, &b)
			if len(b) != 7 || len(a) < 7 || b[0].Position != a[len(a)-7].Position || b[6].Position != a[len(a)-1].Position {
				t.Errorf("--limit 7 over pages of 3: %v, want the last 7 of %v", b, a)
			}
		})
	}
}

// With the store locked by a running controller that left
// DATA/controller.json, a verb asks that controller (with the token in
// DATA/api-token) instead of failing; without the file it fails as locked.
func TestLockedStoreFindsTheController(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	dir := upExample(t)
	s := startServer(t, dir)
	if code, _, errOut := mesh(t, "status", "--data", dir); code != exitFailed || !strings.Contains(errOut, "locked") {
		t.Fatalf("status on a locked store with no controller.json: exit %d, %q", code, errOut)
	}
	remove, err := controller.WriteInfo(dir, controller.Info{Listen: strings.TrimPrefix(s.url, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	if err := os.WriteFile(filepath.Join(dir, api.TokenFile), []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mesh(t, "status", "--data", dir)
	if code != exitOK {
		t.Fatalf("status through the controller: exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "status", out, dir)
	if code, out, errOut := mesh(t, "node", "register", "late", "--data", dir); code != exitOK || !strings.Contains(out, "node-late #") {
		t.Fatalf("a write through the controller: exit %d\n%s%s", code, out, errOut)
	}
}
