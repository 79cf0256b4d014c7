package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/api/httpapi"
	"meshplane/controller"
	"meshplane/events/boltstore"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// server is a controller over the store in a data directory, running, served
// by httpapi.Handler on an httptest server: what the CLI's --server reaches.
// It holds the store's lock until stopped.
type server struct {
	url, tokenFile string
	store          *boltstore.Store
	ctrl           *controller.Controller
	stop           func()
}

func startServer(t *testing.T, dir string) *server {
	t.Helper()
	return startServerWith(t, dir, nil)
}

// startServerWith starts a server whose controller pushes to pub (nil: no
// bus).
func startServerWith(t *testing.T, dir string, pub controller.Publisher) *server {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Store: s, Clock: wallClock, Publisher: pub})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	hs := httptest.NewServer(httpapi.Handler(c, testToken))
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
	if err := os.WriteFile(filepath.Join(dir, httpapi.TokenFile), []byte(testToken+"\n"), 0o600); err != nil {
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

// Every query's JSON is the same from the local store and from a
// controller over it.
func TestJSONBothModes(t *testing.T) {
	dir := upExample(t)
	queries := [][]string{
		{"status"},
		{"status", "novox"},
		{"node", "show", "novox"},
		{"timeline", "--node", "novox"},
		{"timeline", "--type", "apply.reported", "--limit", "3"},
		{"why", "novox", "ca"},
		{"churn"},
		{"roster", "g14"},
		{"roster", "--history", "novox"},
	}
	local := map[int]string{}
	for i, q := range queries {
		code, out, errOut := mesh(t, append(append(q, "-o", "json"), "--data", dir)...)
		if code != exitOK || !json.Valid([]byte(out)) {
			t.Fatalf("mesh %v -o json: exit %d\n%s%s", q, code, out, errOut)
		}
		local[i] = out
	}
	s := startServer(t, dir)
	for i, q := range queries {
		code, out, errOut := mesh(t, append(append(q, "-o", "json"), s.flags()...)...)
		if code != exitOK || out != local[i] {
			t.Errorf("mesh %v -o json from a controller: exit %d\n%s%s\n--- local\n%s", q, code, out, errOut, local[i])
		}
	}
}

// MESH_SERVER and MESH_TOKEN point every verb at a controller; an explicit
// --data still means the local store, and --server with --data is refused.
func TestServerFromTheEnvironment(t *testing.T) {
	dir := upExample(t)
	want, err := os.ReadFile("testdata/status.golden")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir)
	t.Setenv("MESH_SERVER", s.url)
	t.Setenv("MESH_TOKEN", testToken)
	if code, out, errOut := mesh(t, "status"); code != exitOK || out != string(want) {
		t.Fatalf("status with MESH_SERVER: exit %d\n%s%s", code, out, errOut)
	}
	// The controller holds the store: --data reaches the store, not it.
	if code, _, errOut := mesh(t, "status", "--data", dir); code != exitFailed || !strings.Contains(errOut, "locked") {
		t.Fatalf("status --data beside MESH_SERVER: exit %d, %q; want the local store, locked", code, errOut)
	}
	t.Setenv("MESH_TOKEN", "wrong")
	if code, _, errOut := mesh(t, "status"); code != exitFailed || !strings.Contains(errOut, "unauthorized") {
		t.Fatalf("a wrong token: exit %d, %q", code, errOut)
	}
}

// --tls-ca verifies a controller's certificate from a private CA; without
// it the certificate is refused.
func TestTLSCA(t *testing.T) {
	dir := upExample(t)
	s, err := boltstore.Open(filepath.Join(dir, "events.db"), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := controller.New(controller.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewTLSServer(httpapi.Handler(c, testToken))
	defer hs.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MESH_TOKEN", testToken)
	if code, _, errOut := mesh(t, "status", "--server", hs.URL); code != exitFailed || !strings.Contains(errOut, "certificate") {
		t.Fatalf("an unknown CA: exit %d, %q", code, errOut)
	}
	want, err := os.ReadFile("testdata/status.golden")
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := mesh(t, "status", "--server", hs.URL, "--tls-ca", ca); code != exitOK || out != string(want) {
		t.Fatalf("with --tls-ca: exit %d\n%s%s", code, out, errOut)
	}
}
