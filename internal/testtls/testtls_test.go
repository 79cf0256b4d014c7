package testtls_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"meshplane/internal/testtls"
)

// TestNew: the files load as a key pair whose certificate the CA verifies
// for 127.0.0.1 and localhost as a server, and for the names given to New
// (an address, a DNS name), and not for another name; a second CA does not
// verify it.
func TestNew(t *testing.T) {
	p, other := testtls.New(t, "10.213.0.1", "ctl.test"), testtls.New(t)
	pair, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := func(pemCA []byte) *x509.CertPool {
		cp := x509.NewCertPool()
		if !cp.AppendCertsFromPEM(pemCA) {
			t.Fatalf("no certificate in the CA's PEM %q", pemCA)
		}
		return cp
	}
	for _, tc := range []struct {
		name  string
		ca    []byte
		host  string
		valid bool
	}{
		{"127.0.0.1", p.CAPEM, "127.0.0.1", true},
		{"localhost", p.CAPEM, "localhost", true},
		{"an address given", p.CAPEM, "10.213.0.1", true},
		{"a DNS name given", p.CAPEM, "ctl.test", true},
		{"another address", p.CAPEM, "10.213.0.2", false},
		{"another name", p.CAPEM, "example.org", false},
		{"another CA", other.CAPEM, "127.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := leaf.Verify(x509.VerifyOptions{
				Roots: pool(tc.ca), DNSName: tc.host,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			if (err == nil) != tc.valid {
				t.Fatalf("Verify for %s: %v, valid want %v", tc.host, err, tc.valid)
			}
		})
	}
}
