package httpapi_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/api/httpapi"
	"meshplane/internal/testtls"
)

func TestCheckListen(t *testing.T) {
	cases := []struct {
		addr          string
		tls, insecure bool
		refused       bool
	}{
		{"127.0.0.1:7480", false, false, false},
		{"127.8.9.10:7480", false, false, false},
		{"[::1]:7480", false, false, false},
		{"localhost:7480", false, false, false},
		{"10.0.0.5:7480", false, false, true},
		{"0.0.0.0:7480", false, false, true},
		{":7480", false, false, true},
		{"[::]:7480", false, false, true},
		{"example.org:7480", false, false, true},
		{"10.0.0.5:7480", true, false, false},
		{"10.0.0.5:7480", false, true, false},
		{":7480", true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			err := httpapi.CheckListen(tc.addr, tc.tls, tc.insecure)
			if got := errors.Is(err, httpapi.ErrInsecureListen); got != tc.refused {
				t.Errorf("CheckListen(%q, tls %v, insecure %v) = %v, refused want %v", tc.addr, tc.tls, tc.insecure, err, tc.refused)
			}
		})
	}
	if err := httpapi.CheckListen("no-port", false, false); err == nil || errors.Is(err, httpapi.ErrInsecureListen) {
		t.Errorf("an address without a port: %v", err)
	}
}

// TestServeTLS serves the API with a certificate the test's CA signed: a
// client trusting that CA gets answers, one that does not is refused, and
// plain HTTP gets nothing.
func TestServeTLS(t *testing.T) {
	e := newEnv(t)
	p := testtls.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- httpapi.Serve(ctx, ln, httpapi.Handler(e.ctrl, token), httpapi.ServeOptions{TLSCert: p.CertFile, TLSKey: p.KeyFile})
	}()
	addr := ln.Addr().String()

	cases := []struct {
		name string
		url  string
		opts []httpapi.ClientOption
		ok   bool
	}{
		{"client trusting the CA", "https://" + addr, []httpapi.ClientOption{httpapi.WithCA(p.CAPEM)}, true},
		{"client trusting the system roots", "https://" + addr, nil, false},
		{"plain HTTP", "http://" + addr, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := httpapi.NewClient(tc.url, token, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Info(e.ctx)
			if tc.ok && (err != nil || info.Version != "test") {
				t.Errorf("info = %+v, %v", info, err)
			}
			if !tc.ok && err == nil {
				t.Error("answered, want a refusal")
			}
		})
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve after a clean stop: %v", err)
	}
	if _, err := httpapi.NewClient("https://"+addr, token, httpapi.WithCA([]byte("not pem"))); err == nil {
		t.Error("a CA file without PEM was accepted")
	}
}

// fakeListener claims an address beyond loopback.
type fakeListener struct{ net.Listener }

func (fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 7480} }

func TestServeRefusesPlainBeyondLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = httpapi.Serve(context.Background(), fakeListener{ln}, http.NotFoundHandler(), httpapi.ServeOptions{})
	if !errors.Is(err, httpapi.ErrInsecureListen) {
		t.Errorf("Serve on 10.0.0.5 without TLS: %v, want ErrInsecureListen", err)
	}
	err = httpapi.Serve(context.Background(), fakeListener{ln}, http.NotFoundHandler(), httpapi.ServeOptions{TLSCert: "only-a-cert.pem"})
	if err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("a certificate without its key: %v", err)
	}
}

func TestLoadOrCreateToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tok, err := httpapi.LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 {
		t.Errorf("token %q: want 64 hex digits", tok)
	}
	path := filepath.Join(dir, httpapi.TokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %#o, want 0600", fi.Mode().Perm())
	}
	again, err := httpapi.LoadOrCreateToken(dir)
	if err != nil || again != tok {
		t.Errorf("second start: %q, %v; want the same token", again, err)
	}
	other, err := httpapi.LoadOrCreateToken(t.TempDir())
	if err != nil || other == tok {
		t.Errorf("another data directory: %q, %v; want another token", other, err)
	}

	cases := []struct {
		name    string
		content string
		mode    os.FileMode
	}{
		{"readable by others", "abc\n", 0o644},
		{"writable by the group", "abc\n", 0o620},
		{"empty", "\n", 0o600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			p := filepath.Join(d, httpapi.TokenFile)
			if err := os.WriteFile(p, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tok, err := httpapi.LoadOrCreateToken(d); err == nil {
				t.Errorf("accepted %q", tok)
			}
		})
	}
}
