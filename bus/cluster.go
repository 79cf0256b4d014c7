package bus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A clustered bus: the embedded servers of the controllers that share one
// store route to each other and form one NATS cluster, one JetStream
// (clustered: the bucket and the stream replicated, ControllerConfig's
// Replicas), so that a controller's death takes no agent's bus with it.
//
//   - ServerConfig.Cluster is where this server listens for its peers'
//     routes, ServerConfig.Peers the peers' route URLs
//     (nats-route://host:port), ServerConfig.Name this server's name,
//     unique in the cluster and the same at every start (JetStream's
//     replicas know their peers by it). The cluster's name is ClusterName.
//   - One trust root for every server: the cluster is one operator's, its
//     accounts and users the same everywhere, so a node's credentials
//     minted by any controller work on every server. It is given to each
//     (ServerConfig.TrustDir, `mesh up --bus-trust DIR`): a copy, made by the
//     operator, of the first controller's bus directory's seeds. It is not
//     kept in the store: the seeds are secrets, and the store's history is
//     exported and read by every operator (mesh export); a secret in an
//     event would be in every export and every backup for ever, and could
//     never be taken back.
//   - Routes are authenticated with the trust root: a route's password is
//     the operator key's signature of a fixed text (routePassword), which
//     only a holder of the same operator seed can make. A server of another
//     trust root is refused by its peers, and its routes are refused: Server
//     says so (RouteRefused), and the controller refuses to start rather
//     than run a bus its agents cannot use.
//   - With TLS (TLSCert, TLSKey), routes are TLS too, with the same
//     certificate, which then must be good for both server and client
//     authentication (extended key usage serverAuth and clientAuth); peers
//     verify each other's certificate against ClusterCA (a PEM file: the
//     private CA that signed them), else the system's roots.
//
// Agents get every server's client URL (Server.URLs, which the cluster
// tells each server), and the NATS client reconnects to any of them when
// its server goes away; it also learns servers that joined later from the
// servers themselves.

// ClusterName is the NATS cluster's name the embedded servers form.
const ClusterName = "meshplane"

// standaloneName is a lone embedded server's name (no cluster).
const standaloneName = "meshplane"

// routeUser is the user a route authenticates as (with routePassword).
const routeUser = "meshplane-route"

// routeText is what the operator key signs to make the routes' password.
const routeText = "meshplane bus route password, version 1"

// ErrTrustMismatch means a peer of the clustered bus refused this
// server's routes, or this server refused a peer's: they were started with
// different trust roots (--bus-trust).
var ErrTrustMismatch = errors.New("bus: a peer has another trust root: its routes and ours are refused (give every controller a copy of the same --bus-trust directory)")

// ErrNoTrust means the trust directory given lacks a seed of the trust
// root: it is never made there (a cluster's trust root is copied from the
// first controller's).
var ErrNoTrust = errors.New("bus: no trust root in the directory")

// openTrust reads the trust root from dir, which must hold all three
// seeds (operator.nk, system-account.nk, mesh-account.nk): unlike
// LoadAuthority it never makes one. It is how a controller of a clustered
// bus reads the trust root it was given (--bus-trust).
func openTrust(dir string) (*Authority, error) {
	a, err := OpenAuthority(dir)
	if errors.Is(err, ErrNoAuthority) {
		return nil, fmt.Errorf("%w: %v (copy the first controller's DATA/bus/*.nk there)", ErrNoTrust, err)
	}
	return a, err
}

// OperatorPublicKey is the operator's public key (O...): the trust root's
// name, the same on every server of a cluster.
func (a *Authority) OperatorPublicKey() string { return mustPub(a.operator) }

// routePassword is the password of the cluster's routes: the operator's
// signature of routeText (Ed25519 signatures are deterministic), so every
// server of one trust root makes the same, and no one without its seed can.
func (a *Authority) routePassword() (string, error) {
	sig, err := a.operator.Sign([]byte(routeText))
	if err != nil {
		return "", fmt.Errorf("bus: route password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sig), nil
}

// serverNameRE is what a server's name may be: NATS refuses spaces, and
// the name is in every log line and monitoring page.
var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidServerName says whether name can name an embedded server.
func ValidServerName(name string) error {
	if !serverNameRE.MatchString(name) {
		return fmt.Errorf("bus: server name %q: want letters, digits, '.', '_' or '-', at most 64", name)
	}
	return nil
}

// ParsePeers reads route URLs (nats-route://host:port, or host:port),
// refusing anything else with the URL named.
func ParsePeers(peers []string) ([]*url.URL, error) {
	var out []*url.URL
	for _, p := range peers {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.Contains(p, "://") {
			p = "nats-route://" + p
		}
		u, err := url.Parse(p)
		if err != nil {
			return nil, fmt.Errorf("bus: peer %q: %w", p, err)
		}
		if u.Scheme != "nats-route" && u.Scheme != "nats" && u.Scheme != "tls" {
			return nil, fmt.Errorf("bus: peer %q: scheme %q, want nats-route://", p, u.Scheme)
		}
		if u.User != nil {
			return nil, fmt.Errorf("bus: peer %q: no user or password in a peer's URL: routes are authenticated with the trust root", p)
		}
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
			return nil, fmt.Errorf("bus: peer %q: want host:port", p)
		}
		out = append(out, u)
	}
	return out, nil
}

// DefaultReplicas is the replica count of the bucket and the stream for a
// bus of servers servers: 3 from three servers on (a majority survives
// one's loss), else one each (two replicas would survive nothing: a
// majority of two is two).
func DefaultReplicas(servers int) int {
	if servers >= 3 {
		return 3
	}
	return 1
}

// clusterOptions sets opts up for a clustered bus: routes listening on
// cfg.Cluster, soliciting cfg.Peers, authenticated with auth, TLS with
// tc's certificate when the clients' is.
func clusterOptions(opts *server.Options, cfg ServerConfig, auth *Authority, useTLS bool) error {
	if cfg.Name == "" {
		return errors.New("bus: start: a clustered bus needs the server's name")
	}
	host, portText, err := net.SplitHostPort(cfg.Cluster)
	if err != nil {
		return fmt.Errorf("bus: start: cluster listen %q: %w", cfg.Cluster, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < -1 || port > 65535 {
		return fmt.Errorf("bus: start: cluster listen %q: bad port", cfg.Cluster)
	}
	if port == 0 {
		port = -1 // a free port, as for the client port
	}
	if !useTLS && !cfg.Insecure && !isLoopback(host) {
		return fmt.Errorf("%w: routes on %s", ErrInsecure, cfg.Cluster)
	}
	peers, err := ParsePeers(cfg.Peers)
	if err != nil {
		return err
	}
	pass, err := auth.routePassword()
	if err != nil {
		return err
	}
	for _, u := range peers {
		u.Scheme = "nats-route"
		u.User = url.UserPassword(routeUser, pass)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	opts.Cluster = server.ClusterOpts{
		Name: ClusterName, Host: host, Port: port,
		Username: routeUser, Password: pass, AuthTimeout: 2,
	}
	opts.Routes = peers
	if useTLS {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, CaFile: cfg.ClusterCA, Verify: true, Timeout: 2,
		})
		if err != nil {
			return fmt.Errorf("bus: start: route tls: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		// Outgoing routes verify the peer's certificate with the same CA.
		tc.RootCAs = tc.ClientCAs
		if cfg.ClusterCA == "" {
			if tc.RootCAs, err = x509.SystemCertPool(); err != nil {
				return fmt.Errorf("bus: start: route tls: %w", err)
			}
			tc.ClientCAs = tc.RootCAs
		}
		opts.Cluster.TLSConfig = tc
		opts.Cluster.TLSTimeout = 2
	}
	return nil
}

// routeWatch notices, in the server's log, the routes refused for their
// authorization: a peer of another trust root (ErrTrustMismatch).
type routeWatch struct {
	mu      sync.Mutex
	refused string // the first such log line
}

// see looks at one of the server's error lines; it is true the first
// time it finds a route refused (to be said plainly, once).
func (w *routeWatch) see(line string) bool {
	l := strings.ToLower(line)
	if !strings.Contains(l, "rid:") || !(strings.Contains(l, "authorization") || strings.Contains(l, "authentication")) {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused != "" {
		return false
	}
	w.refused = line
	return true
}

func (w *routeWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused == "" {
		return nil
	}
	return fmt.Errorf("%w (the server said: %s)", ErrTrustMismatch, w.refused)
}

// RouteRefused is ErrTrustMismatch, wrapped with what the server said,
// once a route to or from a peer was refused for its authorization (a peer
// of another trust root); nil while none was.
func (s *Server) RouteRefused() error {
	if s.routes == nil {
		return nil
	}
	return s.routes.err()
}

// Clustered says whether the server routes to peers.
func (s *Server) Clustered() bool { return s.clustered }

// URLs are the client URLs of every server of the bus that this one knows
// of: its own first (URL), then the others' as the cluster told it (a
// server that joins later is told to clients by the servers themselves).
func (s *Server) URLs() []string {
	urls := []string{s.URL()}
	if !s.clustered {
		return urls
	}
	v, err := s.ns.Varz(nil)
	if err != nil {
		return urls
	}
	scheme := "nats://"
	if s.tls {
		scheme = "tls://"
	}
	own := strings.TrimPrefix(strings.TrimPrefix(s.URL(), "tls://"), "nats://")
	for _, hp := range v.ClientConnectURLs {
		if hp == own {
			continue
		}
		urls = append(urls, scheme+hp)
	}
	return urls
}

// ClusterURL is the route URL (nats-route://host:port) peers dial to reach
// this server; "" when it is not clustered. A server listening on every
// interface gives 127.0.0.1.
func (s *Server) ClusterURL() string {
	if !s.clustered {
		return ""
	}
	addr := s.ns.ClusterAddr()
	if addr == nil {
		return ""
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "nats-route://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// Name is the server's name.
func (s *Server) Name() string { return s.ns.Name() }

// Routes is how many peers the server is routed to now.
func (s *Server) Routes() int { return s.ns.NumRoutes() }

// DialControllerWaiting is DialController trying again, every second,
// while the bus cannot make or find the bucket and the stream yet: a
// clustered JetStream elects its leaders once a majority of its servers
// are routed, so the first controller of a cluster waits for a peer. It
// ends with ctx (the last error), or when refused, asked between tries,
// says why it never will (Server.RouteRefused: a peer of another trust
// root). Credentials the bus refuses end it at once.
func DialControllerWaiting(ctx context.Context, cfg ControllerConnConfig, refused func() error) (*ControllerConn, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	said := time.Time{}
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := DialController(actx, cfg)
		cancel()
		if err == nil {
			return c, nil
		}
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) {
			return nil, err
		}
		if refused != nil {
			if rerr := refused(); rerr != nil {
				return nil, rerr
			}
		}
		if time.Since(said) > 10*time.Second {
			log.Info("bus: waiting for the bus's JetStream (a clustered bus needs a majority of its servers)", "for", time.Since(start).Round(time.Second), "err", err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bus: gave up waiting for JetStream after %s: %w", time.Since(start).Round(time.Second), err)
		case <-time.After(time.Second):
		}
	}
}

// TakeOverReports deletes the reports' durable consumer, so that the next
// ConsumeReports makes it anew from the first report still in the stream
// (a work queue: what was acknowledged is gone). A controller that takes
// over from one that died calls it first: the reports the dead one had in
// hand (delivered, not acknowledged) are then delivered again at once,
// rather than when their ackWait ends. Any it had recorded and not yet
// acknowledged are recorded once all the same: the apply id is the
// event's id. None there is no error.
func (c *ControllerConn) TakeOverReports(ctx context.Context) error {
	err := c.js.DeleteConsumer(ctx, ReportsStream, ReportsConsumer)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("bus: take over consumer %s: %w", ReportsConsumer, err)
	}
	return nil
}

// ConnectedURL is the URL of the server the node is connected to now
// ("" while it is not).
func (n *Node) ConnectedURL() string { return n.nc.ConnectedUrlRedacted() }

// Ready says whether the bucket and the stream answer now: each has a
// leader (a clustered bus elects new ones, in seconds, when a server
// dies). A controller that starts leading waits for it, so that its first
// pushes are not refused for a leader not yet elected.
func (c *ControllerConn) Ready(ctx context.Context) error {
	for _, name := range []string{"KV_" + DeclarationsBucket, ReportsStream} {
		st, err := c.js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("bus: stream %s: %w", name, err)
		}
		if info := st.CachedInfo(); info.Cluster != nil && info.Cluster.Leader == "" {
			return fmt.Errorf("bus: stream %s: no leader yet", name)
		}
	}
	return nil
}
