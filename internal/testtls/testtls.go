// Package testtls makes a private certificate authority and a server
// certificate it signed, for tests only: nothing outside a _test.go file
// should import it. The keys are fresh ECDSA P-256 keys, valid for an hour
// either side of now, and the server certificate names 127.0.0.1 and
// localhost, and any other names a test gives (an address beyond loopback).
package testtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA and a server certificate it signed.
type PKI struct {
	// CAPEM is the CA's certificate, PEM encoded: what a client trusts.
	CAPEM []byte
	// CertFile is the server's certificate, a PEM "CERTIFICATE" block,
	// and KeyFile its key, a PEM "EC PRIVATE KEY" block (mode 0600), both
	// in a temporary directory of the test's.
	CertFile, KeyFile string
}

// New makes a fresh CA and a server certificate for 127.0.0.1 and
// localhost signed by it, writes the certificate and its key to files in
// tb.TempDir(), and fails tb on any error. Two calls make two unrelated CAs.
// names are more names the certificate is for: an IP address ("10.213.0.1",
// a host of a test's private link) goes in its IP addresses, anything else
// in its DNS names.
func New(tb testing.TB, names ...string) PKI {
	tb.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		return k
	}
	caKey, srvKey := newKey(), newKey()
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "meshplane test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatal(err)
	}
	ips, dns := []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, n)
		}
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "meshplane test server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: ips, DNSNames: dns,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, // client too: a clustered bus's routes present it to each other
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	p := PKI{
		CAPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CertFile: filepath.Join(dir, "server.crt"),
		KeyFile:  filepath.Join(dir, "server.key"),
	}
	if err := os.WriteFile(p.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}
