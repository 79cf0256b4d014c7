package controllerd

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meshplane/internal/testtls"
)

func TestAgentURLs(t *testing.T) {
	for _, tc := range []struct {
		bus  []string
		api  string
		want []string
	}{
		{[]string{"tls://127.0.0.1:4222"}, "https://127.0.0.1:7480", []string{"tls://127.0.0.1:4222"}},
		{[]string{"tls://127.0.0.1:4222"}, "https://ctl.example:7480", []string{"tls://ctl.example:4222"}},
		{[]string{"tls://10.0.0.1:4222"}, "https://ctl.example:7480", []string{"tls://10.0.0.1:4222"}},
		{[]string{"nats://0.0.0.0:4222"}, "http://10.0.0.1:7480", []string{"nats://10.0.0.1:4222"}},
	} {
		if got := agentURLs(tc.bus, tc.api); !slices.Equal(got, tc.want) {
			t.Errorf("agentURLs(%v, %s) = %v; want %v", tc.bus, tc.api, got, tc.want)
		}
	}
}

// TestLoadCA: --tls-ca wins; a chain gives its last certificate; a
// certificate signed by a CA not given gives none; no TLS, none.
func TestLoadCA(t *testing.T) {
	p := testtls.New(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	leaf, err := os.ReadFile(p.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	chain := write("chain.pem", append(append([]byte{}, leaf...), p.CAPEM...))
	caFile := write("ca.pem", p.CAPEM)
	selfSigned := write("self.pem", p.CAPEM) // the CA's certificate is self-signed
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name string
		cfg  Config
		want []byte
		err  string
	}{
		{"no TLS", Config{}, nil, ""},
		{"--tls-ca", Config{TLSCert: p.CertFile, TLSCA: caFile}, p.CAPEM, ""},
		{"a chain", Config{TLSCert: chain}, p.CAPEM, ""},
		{"a self-signed certificate", Config{TLSCert: selfSigned}, p.CAPEM, ""},
		{"a leaf of a CA not given", Config{TLSCert: p.CertFile}, nil, ""},
		{"a CA file without PEM", Config{TLSCert: p.CertFile, TLSCA: write("bad.pem", []byte("x"))}, nil, "no PEM certificate"},
	} {
		got, err := loadCA(tc.cfg, log)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: loadCA = %v; want an error with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || strings.TrimSpace(string(got)) != strings.TrimSpace(string(tc.want)) {
			t.Errorf("%s: loadCA = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
