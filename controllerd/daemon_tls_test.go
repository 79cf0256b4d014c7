package controllerd_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/api/httpapi"
	"meshplane/controllerd"
	"meshplane/internal/meshtest"
	"meshplane/internal/testtls"
)

// TestDaemonTLS: with a certificate, the API and the embedded bus speak
// TLS only; the CLI's client and an agent verify them against the private
// CA (the agent's from its credentials), and a client without it is
// refused.
func TestDaemonTLS(t *testing.T) {
	p := testtls.New(t)
	ca, cert, key := p.CAPEM, p.CertFile, p.KeyFile
	d := meshtest.StartDaemon(t, t.TempDir(), "", func(c *controllerd.Config) { c.TLSCert, c.TLSKey = cert, key })
	if !strings.HasPrefix(d.Ready.APIURL, "https://") || !strings.HasPrefix(d.Ready.BusURLs[0], "tls://") {
		t.Fatalf("API at %s, bus at %v: want https and tls", d.Ready.APIURL, d.Ready.BusURLs)
	}
	ctx := context.Background()
	t.Run("a client without the CA", func(t *testing.T) {
		if _, err := d.Client.Info(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("Info: %v, want a certificate error", err)
		}
	})
	c, err := httpapi.NewClient(d.Ready.APIURL, d.Ready.Token, httpapi.WithCA(ca))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.DaemonSetUp(t, c, []string{"n1"})
	creds := filepath.Join(t.TempDir(), "n1.creds")
	if err := controllerd.RegisterCreds(d.Cfg.Data, "n1", creds, d.Ready.BusURLs, ca); err != nil {
		t.Fatal(err)
	}
	n1 := meshtest.StartNode(t, creds, t.TempDir())
	meshtest.InSync(t, c, "n1")
	if _, ok := n1.Sim.Container("searxng"); !ok {
		t.Error("no searxng container on n1's node")
	}
}
