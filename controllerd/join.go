package controllerd

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/nats-io/nkeys"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/controller"
)

// joinWiring is what Run hands the bus's start for joining: the revocation
// list history gives, as the controller's resumed projections hold it (the
// embedded bus starts with it; an external cluster is given it once the
// controller is connected).
type joinWiring struct {
	revoked map[string]time.Time
}

// newMinter is the minter of the bus b (nil when it mints nothing: an
// external cluster without --nats-account-seed), for an API at apiURL and
// busURLs the bus's; caPEM is the API's CA, which the embedded bus shares.
func newMinter(b startedBus, busURLs []string, apiURL string, caPEM []byte) (*busMinter, error) {
	if b.issuer == nil {
		return nil, nil
	}
	m := &busMinter{issuer: b.issuer, revoker: b.revoker, urls: agentURLs(busURLs, apiURL), ca: caPEM, apiURL: apiURL}
	if b.external {
		m.urls, m.ca = busURLs, b.caPEM
	}
	if caPEM != nil {
		var err error
		if m.caPrint, err = httpapi.CAFingerprint(caPEM); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (j *joinWiring) revokedList() map[string]time.Time {
	if j == nil {
		return nil
	}
	return j.revoked
}

// loadCA reads the PEM of the CA the API's and the bus's certificates
// chain to: --tls-ca when given; else, of the --tls-cert file, the
// last certificate of a chain of several, or the one certificate when it
// is self-signed. Nil without TLS, or when the one certificate is signed
// by a CA not given (a public one: clients use their system roots), which
// is logged.
func loadCA(cfg Config, log *slog.Logger) ([]byte, error) {
	if cfg.TLSCA != "" {
		b, err := os.ReadFile(cfg.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("controller: --tls-ca: %w", err)
		}
		if _, err := httpapi.CAFingerprint(b); err != nil {
			return nil, fmt.Errorf("controller: --tls-ca %s: %w", cfg.TLSCA, err)
		}
		return b, nil
	}
	if cfg.TLSCert == "" {
		return nil, nil
	}
	b, err := os.ReadFile(cfg.TLSCert)
	if err != nil {
		return nil, fmt.Errorf("controller: --tls-cert: %w", err)
	}
	var certs []*pem.Block
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			certs = append(certs, blk)
		}
	}
	switch {
	case len(certs) == 0:
		return nil, fmt.Errorf("controller: --tls-cert %s holds no PEM certificate", cfg.TLSCert)
	case len(certs) > 1:
		return pem.EncodeToMemory(certs[len(certs)-1]), nil
	}
	c, err := x509.ParseCertificate(certs[0].Bytes)
	if err != nil {
		return nil, fmt.Errorf("controller: --tls-cert %s: %w", cfg.TLSCert, err)
	}
	if bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignatureFrom(c) == nil {
		return pem.EncodeToMemory(certs[0]), nil
	}
	log.Warn("controller: --tls-cert is signed by a CA not given (--tls-ca): join tokens carry no CA fingerprint, and agents verify with their system roots")
	return nil, nil
}

// busMinter is controller.Minter over the embedded bus's trust root, or
// over an external cluster's account signing key.
type busMinter struct {
	issuer  *bus.Issuer
	revoker revoker  // nil: Revoke fails with bus.ErrNoRevoker
	urls    []string // the bus URLs agents dial
	ca      []byte   // PEM, nil without a private CA
	apiURL  string
	caPrint string
}

var _ controller.Minter = (*busMinter)(nil)

func (m *busMinter) Endpoint() (string, string) { return m.apiURL, m.caPrint }

func (m *busMinter) CheckKey(pub string) error {
	if !nkeys.IsValidPublicUserKey(pub) {
		return bus.ErrNotUserKey
	}
	return nil
}

func (m *busMinter) NodeUser(node, pub string) (api.NodeCreds, error) {
	tok, err := m.issuer.NodeFor(node, pub)
	if err != nil {
		return api.NodeCreds{}, err
	}
	return api.NodeCreds{Version: 1, Node: node, URLs: m.urls, JWT: tok, CA: string(m.ca)}, nil
}

func (m *busMinter) NewNodeCreds(node string) (api.NodeCreds, string, error) {
	c, err := bus.NewCreds(m.issuer, node, m.urls, m.ca)
	if err != nil {
		return api.NodeCreds{}, "", err
	}
	pub, err := bus.UserPublicKey(c.JWT)
	if err != nil {
		return api.NodeCreds{}, "", err
	}
	return api.NodeCreds{Version: c.Version, Node: c.Node, URLs: c.URLs, JWT: c.JWT, Seed: c.Seed, CA: c.CA}, pub, nil
}

func (m *busMinter) Revoke(ctx context.Context, revoked map[string]time.Time) error {
	if m.revoker == nil {
		return bus.ErrNoRevoker
	}
	return m.revoker.Revoke(ctx, revoked)
}

// agentURLs are the bus URLs the credentials name: the bus's own, where
// one on loopback (a bus on every interface says 127.0.0.1) takes the
// host of the API's URL when that is not loopback, the address the
// operator reaches the controller at.
func agentURLs(busURLs []string, apiURL string) []string {
	au, err := url.Parse(apiURL)
	if err != nil || isLoopbackHost(au.Hostname()) {
		return busURLs
	}
	out := make([]string, len(busURLs))
	for i, s := range busURLs {
		out[i] = s
		u, err := url.Parse(s)
		if err != nil || !isLoopbackHost(u.Hostname()) {
			continue
		}
		u.Host = net.JoinHostPort(au.Hostname(), u.Port())
		out[i] = u.String()
	}
	return out
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// advertisedAPI is the API URL a join token names: Config.AdvertiseURL,
// else the one the API listens on, with an unspecified host (every
// interface) replaced by the machine's host name.
func advertisedAPI(cfg Config, apiURL string) string {
	if cfg.AdvertiseURL != "" {
		return cfg.AdvertiseURL
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return apiURL
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			u.Host = net.JoinHostPort(h, u.Port())
		}
	}
	return u.String()
}
