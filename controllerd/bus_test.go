package controllerd

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"

	"meshplane/bus"
)

// TestBusListen: --bus-listen's port 0 is a free port, as for --listen
// (nats-server's -1); anything else goes through as given.
func TestBusListen(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: bus.DefaultListen},
		{in: "127.0.0.1:0", want: "127.0.0.1:-1"},
		{in: "10.0.0.5:4222", want: "10.0.0.5:4222"},
		{in: "127.0.0.1:-1", want: "127.0.0.1:-1"},
		{in: "[::1]:0", want: "[::1]:-1"},
		{in: "localhost", err: `controller: --bus-listen "localhost"`},
	} {
		got, err := busListen(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("busListen(%q): %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("busListen(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestRegisterCreds: node credentials minted from the data directory's
// trust root (a controller's: refused, naming the directory, where there is
// none, and none is made), naming the URLs given or the embedded bus's
// default, and refused without a file.
func TestRegisterCreds(t *testing.T) {
	data := t.TempDir()
	if err := RegisterCreds(data, "n0", filepath.Join(t.TempDir(), "n0.creds"), nil, nil); !errors.Is(err, bus.ErrNoAuthority) || !strings.Contains(err.Error(), filepath.Join(data, BusDir)) {
		t.Fatalf("RegisterCreds without a trust root: %v; want ErrNoAuthority naming the directory", err)
	}
	if _, err := os.Stat(filepath.Join(data, BusDir, "operator.nk")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("RegisterCreds without a trust root made one: %v", err)
	}
	if _, err := bus.LoadAuthority(filepath.Join(data, BusDir)); err != nil { // what the controller's first start does
		t.Fatal(err)
	}
	var issuers []string
	for _, tc := range []struct {
		node     string
		urls     []string
		wantURLs []string
	}{
		{node: "n1", wantURLs: []string{"nats://" + bus.DefaultListen}},
		{node: "n2", urls: []string{"tls://10.0.0.1:4222", "tls://10.0.0.2:4222"}, wantURLs: []string{"tls://10.0.0.1:4222", "tls://10.0.0.2:4222"}},
	} {
		path := filepath.Join(t.TempDir(), tc.node+".creds")
		if err := RegisterCreds(data, tc.node, path, tc.urls, nil); err != nil {
			t.Fatalf("RegisterCreds %s: %v", tc.node, err)
		}
		c, err := bus.LoadCreds(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Node != tc.node || !slices.Equal(c.URLs, tc.wantURLs) || c.CA != "" {
			t.Errorf("creds of %s: node %q, urls %v, ca %q; want %s, %v, none", tc.node, c.Node, c.URLs, c.CA, tc.node, tc.wantURLs)
		}
		uc, err := jwt.DecodeUserClaims(c.JWT)
		if err != nil {
			t.Fatal(err)
		}
		issuers = append(issuers, uc.Issuer)
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("creds file of %s: %v, %v; want mode 0600", tc.node, fi.Mode(), err)
		}
	}
	// One trust root: both users are of the same account.
	auth, err := bus.LoadAuthority(filepath.Join(data, BusDir))
	if err != nil {
		t.Fatal(err)
	}
	for i, iss := range issuers {
		if iss != auth.AccountPublicKey() {
			t.Errorf("user %d issued by %s, want the trust root's account %s", i, iss, auth.AccountPublicKey())
		}
	}
	if err := RegisterCreds(data, "n3", "", nil, nil); err == nil || !strings.Contains(err.Error(), "no file") {
		t.Errorf("RegisterCreds with no file: %v, want an error saying so", err)
	}
}
