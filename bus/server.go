package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// DefaultListen is where the embedded bus listens unless told otherwise.
const DefaultListen = "127.0.0.1:4222"

// ErrInsecure means the embedded bus was asked to listen beyond loopback
// without TLS, and without ServerConfig.Insecure saying so.
var ErrInsecure = errors.New("bus: listening beyond loopback needs TLS (or Insecure)")

// maxPayload is the largest message the embedded bus takes: a declaration
// carries its files' contents, so NATS's 1 MiB default is raised.
const maxPayload = 8 << 20

// authTimeout is how long the embedded server waits for a new
// connection's CONNECT (server.Options.AuthTimeout).
const authTimeout = 10 * time.Second

// ServerConfig is how the embedded bus runs.
type ServerConfig struct {
	// Dir is the bus's directory (DATA/bus): the trust root's seeds (unless
	// TrustDir) and the JetStream store (Dir/jetstream). Required.
	Dir string
	// TrustDir, if set, holds the trust root's seeds instead of Dir, and
	// they must be there (never made there): the copy of the first
	// controller's seeds every controller of a clustered bus is given.
	TrustDir string
	// Name is the server's name: unique in a cluster and the same at every
	// start (JetStream's replicas know their peers by it). Required with
	// Cluster; "meshplane" for a lone server when empty.
	Name string
	// Cluster, if set, is where the server listens for its peers' routes
	// (host:port; port 0 or -1 picks a free one): the bus is then one
	// server of a cluster (ClusterName), JetStream clustered. See
	// cluster.go.
	Cluster string
	// Peers are the other servers' route URLs (nats-route://host:port).
	Peers []string
	// ClusterCA is a PEM file of the CA that signed the peers'
	// certificates, for routes with TLS; the system's roots when empty.
	ClusterCA string
	// Listen is host:port; DefaultListen when empty. Port -1 picks a free
	// port (tests).
	Listen string
	// TLSCert and TLSKey are PEM files; with them clients must use TLS.
	TLSCert, TLSKey string
	// Insecure allows listening beyond loopback without TLS.
	Insecure bool
	// Logger gets the server's notices, warnings and errors; nil discards.
	Logger *slog.Logger
	// Revoked are the users the mesh account revokes from the start
	// (public key → when), from history (see Server.Revoke).
	Revoked map[string]time.Time
}

// Server is the embedded NATS server with JetStream, in operator mode: a
// client is a user of the mesh account, signed by the Authority in Dir.
type Server struct {
	ns        *server.Server
	auth      *Authority
	tls       bool
	clustered bool
	routes    *routeWatch // what the server said of refused routes; nil unless clustered
}

// StartServer starts the embedded bus and waits until it takes clients.
func StartServer(cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("bus: start: no directory")
	}
	listen := cfg.Listen
	if listen == "" {
		listen = DefaultListen
	}
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("bus: start: listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < -1 || port > 65535 {
		return nil, fmt.Errorf("bus: start: listen %q: bad port", listen)
	}
	useTLS := cfg.TLSCert != "" || cfg.TLSKey != ""
	if useTLS && (cfg.TLSCert == "" || cfg.TLSKey == "") {
		return nil, errors.New("bus: start: TLS needs both a certificate and a key")
	}
	if !useTLS && !cfg.Insecure && !isLoopback(host) {
		return nil, fmt.Errorf("%w: %s", ErrInsecure, listen)
	}
	var auth *Authority
	if cfg.TrustDir != "" {
		auth, err = openTrust(cfg.TrustDir)
	} else {
		auth, err = LoadAuthority(cfg.Dir)
	}
	if err != nil {
		return nil, err
	}
	name := cfg.Name
	if name == "" {
		name = standaloneName
	}
	if err := ValidServerName(name); err != nil {
		return nil, err
	}
	op, accounts, err := auth.claims(cfg.Revoked)
	if err != nil {
		return nil, err
	}
	resolver := &server.MemAccResolver{}
	for pub, tok := range accounts {
		if err := resolver.Store(pub, tok); err != nil {
			return nil, fmt.Errorf("bus: start: account %s: %w", pub, err)
		}
	}
	store := filepath.Join(cfg.Dir, "jetstream")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("bus: start: %w", err)
	}
	opts := &server.Options{
		ServerName:       name,
		Host:             host,
		Port:             port,
		NoSigs:           true, // the controller handles signals
		MaxPayload:       maxPayload,
		JetStream:        true,
		StoreDir:         store,
		TrustedOperators: []*jwt.OperatorClaims{op},
		AccountResolver:  resolver,
		SystemAccount:    op.SystemAccount,
		// A connection has this long to say who it is (nats-server's
		// default is 2 s): thousands of agents connecting at once (a
		// fleet coming back after the bus restarted) each need their JWT
		// checked, and were refused with "Authentication Timeout" at 1,000
		// on a loaded machine.
		AuthTimeout: authTimeout.Seconds(),
	}
	if host == "" {
		opts.Host = "0.0.0.0"
	}
	if useTLS {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, Timeout: 2})
		if err != nil {
			return nil, fmt.Errorf("bus: start: tls: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		opts.TLSConfig = tc
		opts.TLS = true
		opts.TLSTimeout = 2
	}
	var routes *routeWatch
	if cfg.Cluster != "" {
		if err := clusterOptions(opts, cfg, auth, useTLS); err != nil {
			return nil, err
		}
		routes = &routeWatch{}
	} else if len(cfg.Peers) > 0 {
		return nil, errors.New("bus: start: peers without a cluster address to listen on for their routes")
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: start: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ns.SetLoggerV2(&slogLogger{l: logger.With("component", "nats-server", "server", name), routes: routes}, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("bus: start: not ready after 10s listening on %s", listen)
	}
	return &Server{ns: ns, auth: auth, tls: useTLS, clustered: routes != nil, routes: routes}, nil
}

// URL is the address clients on this machine dial: nats://host:port, or
// tls://host:port with TLS. A server listening on every interface gives
// 127.0.0.1.
func (s *Server) URL() string {
	addr := s.ns.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "nats"
	if s.tls {
		scheme = "tls"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// Authority is the trust root the server was started with.
func (s *Server) Authority() *Authority { return s.auth }

// Shutdown stops the server: clients are disconnected and JetStream's files
// are flushed. It returns when the server is down or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bus: shutdown: %w", ctx.Err())
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// slogLogger carries nats-server's log to slog; a clustered server's
// errors are also shown to its routeWatch, and a route refused for its
// authorization is said plainly.
type slogLogger struct {
	l      *slog.Logger
	routes *routeWatch
}

func (s *slogLogger) Noticef(format string, v ...any) { s.l.Info(fmt.Sprintf(format, v...)) }
func (s *slogLogger) Warnf(format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	s.l.Warn(line)
	if s.routes != nil && s.routes.see(line) {
		s.l.Error(ErrTrustMismatch.Error(), "route", line)
	}
}
func (s *slogLogger) Fatalf(format string, v ...any) { s.l.Error(fmt.Sprintf(format, v...)) }
func (s *slogLogger) Errorf(format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	s.l.Error(line)
	if s.routes != nil && s.routes.see(line) {
		s.l.Error(ErrTrustMismatch.Error(), "route", line)
	}
}
func (s *slogLogger) Debugf(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s *slogLogger) Tracef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }

var _ server.Logger = (*slogLogger)(nil)

// Controller returns the configuration of a controller in this process: a
// fresh controller user, and an in-process connection (no socket, no TLS).
func (s *Server) Controller(logger *slog.Logger) (ControllerConnConfig, error) {
	u, err := s.auth.Issuer().Controller()
	if err != nil {
		return ControllerConnConfig{}, err
	}
	// nats:// even with TLS: the in-process connection has no socket to
	// secure (the server offers it TLS without requiring it), and a tls://
	// URL would make the client insist.
	url := "nats://" + strings.TrimPrefix(strings.TrimPrefix(s.URL(), "tls://"), "nats://")
	return ControllerConnConfig{URLs: []string{url}, User: u, Logger: logger, inProcess: s.ns}, nil
}
