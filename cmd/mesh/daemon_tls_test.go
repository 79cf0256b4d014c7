package main

import (
	"context"
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
	"strings"
	"testing"
	"time"

	"meshplane/api"
)

// TestDaemonTLS: with a certificate, the API and the embedded bus speak
// TLS only; the CLI's client and an agent verify them against the private
// CA (the agent's from its credentials), and a client without it is
// refused.
func TestDaemonTLS(t *testing.T) {
	ca, cert, key := daemonTLSFiles(t)
	d := startDaemon(t, t.TempDir(), "", func(c *controllerConfig) { c.TLSCert, c.TLSKey = cert, key })
	if !strings.HasPrefix(d.ready.APIURL, "https://") || !strings.HasPrefix(d.ready.BusURLs[0], "tls://") {
		t.Fatalf("API at %s, bus at %v: want https and tls", d.ready.APIURL, d.ready.BusURLs)
	}
	ctx := context.Background()
	t.Run("a client without the CA", func(t *testing.T) {
		if _, err := d.client.Info(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("Info: %v, want a certificate error", err)
		}
	})
	c, err := api.NewClient(d.ready.APIURL, d.ready.Token, api.WithCA(ca))
	if err != nil {
		t.Fatal(err)
	}
	daemonSetUp(t, c, []string{"n1"})
	creds := filepath.Join(t.TempDir(), "n1.creds")
	if err := registerCredsCA(d.cfg.Data, "n1", creds, d.ready.BusURLs, ca); err != nil {
		t.Fatal(err)
	}
	n1 := startNode(t, creds, t.TempDir())
	inSync(t, c, "n1")
	if _, ok := n1.sim.Container("searxng"); !ok {
		t.Error("no searxng container on n1's node")
	}
}

// daemonTLSFiles makes a CA and a certificate for 127.0.0.1 signed by it:
// the CA's PEM, and the certificate's and key's files.
func daemonTLSFiles(t *testing.T) (ca []byte, certFile, keyFile string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
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
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "controller"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}
