package controllerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"meshplane/bus"
	"meshplane/internal/atomicfile"
)

// startedBus is the bus startBus started (or the external one it read the
// configuration of).
type startedBus struct {
	cfg bus.ControllerConnConfig
	// urls are the URLs agents dial, once the controller is connected:
	// every server's of a clustered bus (as the cluster told this one).
	urls func() []string
	// stop stops the embedded server; nil for an external bus.
	stop func(context.Context) error
	// refused, if set, says why the clustered bus will never take the
	// controller (a peer of another trust root): the dial stops waiting.
	refused func() error
	// clustered: the dial waits for the cluster's JetStream (a majority
	// of its servers) for as long as it takes.
	clustered bool
	// issuer mints node users: the embedded bus's trust root, or the
	// account signing key of an external one (--nats-account-seed); nil
	// when there is none (an external bus whose node users are made by
	// its operator).
	issuer *bus.Issuer
	// revoker puts the revocation list on the bus: the embedded server,
	// or an external cluster's ExternalRevoker (--nats-operator-seed and
	// --nats-system-creds); nil when there is none.
	revoker revoker
	// listen is the embedded bus's listening address (host:port), as
	// --bus-listen said; "" for an external bus.
	listen string
	// external: the bus is an external NATS cluster (--nats), whose URLs
	// agents are given as the operator wrote them, with its CA (caPEM).
	external bool
	caPEM    []byte
}

// revoker puts the whole revocation list (public key → when) on the bus.
type revoker interface {
	Revoke(ctx context.Context, revoked map[string]time.Time) error
}

// startBus starts the embedded bus (alone, or one server of a cluster with
// --bus-cluster and --bus-peers) or reads the external one's
// configuration (--nats).
func startBus(cfg Config, log *slog.Logger) (startedBus, error) {
	if len(cfg.NATS) > 0 {
		return externalBus(cfg, log)
	}
	if len(cfg.BusPeers) > 0 && cfg.BusCluster == "" {
		return startedBus{}, errors.New("controller: --bus-peers needs --bus-cluster, the address this controller's bus listens on for its peers' routes")
	}
	listen, err := busListen(cfg.BusListen)
	if err != nil {
		return startedBus{}, err
	}
	dir := filepath.Join(cfg.Data, BusDir)
	sc := bus.ServerConfig{
		Dir: dir, TrustDir: cfg.BusTrust, Listen: listen,
		TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, Insecure: cfg.Insecure, Logger: log,
		Revoked: cfg.join.revokedList(),
	}
	if cfg.BusCluster != "" {
		if sc.Name, err = serverName(dir); err != nil {
			return startedBus{}, err
		}
		sc.Cluster, sc.Peers, sc.ClusterCA = cfg.BusCluster, cfg.BusPeers, cfg.TLSCA
	}
	srv, err := bus.StartServer(sc)
	if err != nil {
		return startedBus{}, fmt.Errorf("controller: %w", err)
	}
	cc, err := srv.Controller(log)
	if err != nil {
		srv.Shutdown(context.Background())
		return startedBus{}, fmt.Errorf("controller: %w", err)
	}
	cc.Replicas = busReplicas(cfg.BusReplicas, 1+len(cfg.BusPeers))
	if srv.Clustered() {
		log.Info("controller: the bus is one server of a cluster", "name", srv.Name(), "routes", srv.ClusterURL(),
			"peers", cfg.BusPeers, "replicas", cc.Replicas, "operator", srv.Authority().OperatorPublicKey())
	}
	return startedBus{
		cfg: cc, urls: srv.URLs, stop: srv.Shutdown, refused: srv.RouteRefused, listen: listen,
		clustered: srv.Clustered(), issuer: srv.Authority().Issuer(), revoker: srv,
	}, nil
}

// busReplicas is the replica count of the bucket and the stream:
// --bus-replicas when given, else bus.DefaultReplicas of the servers (3
// from three on, else 1).
func busReplicas(flag, servers int) int {
	if flag > 0 {
		return flag
	}
	return bus.DefaultReplicas(servers)
}

// externalBus reads an external NATS cluster's configuration: the
// controller's user (--nats-creds), the cluster's CA (--nats-ca), the
// mesh account's signing key (--nats-account-seed) the controller mints
// node users with, and the operator's signing key and system user
// (--nats-operator-seed, --nats-system-creds) it revokes them with.
func externalBus(cfg Config, log *slog.Logger) (startedBus, error) {
	if cfg.NATSCreds == "" {
		return startedBus{}, errors.New("controller: --nats needs --nats-creds, the controller user's .creds file (mesh bus account writes one)")
	}
	b, err := os.ReadFile(cfg.NATSCreds)
	if err != nil {
		return startedBus{}, fmt.Errorf("controller: --nats-creds: %w", err)
	}
	u, err := bus.ParseNATSCreds(b)
	if err != nil {
		return startedBus{}, fmt.Errorf("controller: --nats-creds %s: %w", cfg.NATSCreds, err)
	}
	var ca []byte
	if cfg.NATSCA != "" {
		if ca, err = os.ReadFile(cfg.NATSCA); err != nil {
			return startedBus{}, fmt.Errorf("controller: --nats-ca: %w", err)
		}
	}
	var issuer *bus.Issuer
	if cfg.NATSAccountSeed != "" {
		seed, err := os.ReadFile(cfg.NATSAccountSeed)
		if err != nil {
			return startedBus{}, fmt.Errorf("controller: --nats-account-seed: %w", err)
		}
		if issuer, err = bus.IssuerFor(seed, u); err != nil {
			return startedBus{}, fmt.Errorf("controller: --nats-account-seed %s: %w", cfg.NATSAccountSeed, err)
		}
	}
	urls := append([]string(nil), cfg.NATS...)
	var rv revoker
	switch {
	case (cfg.NATSOperatorSeed == "") != (cfg.NATSSystemCreds == ""):
		return startedBus{}, errors.New("controller: --nats-operator-seed and --nats-system-creds go together: the controller signs the account's revocations with the one and sends them as the other")
	case cfg.NATSOperatorSeed != "":
		op, err := os.ReadFile(cfg.NATSOperatorSeed)
		if err != nil {
			return startedBus{}, fmt.Errorf("controller: --nats-operator-seed: %w", err)
		}
		sys, err := os.ReadFile(cfg.NATSSystemCreds)
		if err != nil {
			return startedBus{}, fmt.Errorf("controller: --nats-system-creds: %w", err)
		}
		account, err := bus.AccountOf(u)
		if err != nil {
			return startedBus{}, fmt.Errorf("controller: --nats-creds %s: %w", cfg.NATSCreds, err)
		}
		if rv, err = bus.NewExternalRevoker(urls, ca, sys, op, account, log); err != nil {
			return startedBus{}, fmt.Errorf("controller: %w", err)
		}
	}
	cc := bus.ControllerConnConfig{URLs: urls, User: u, CA: ca, Logger: log, Replicas: busReplicas(cfg.BusReplicas, len(urls))}
	return startedBus{cfg: cc, urls: func() []string { return urls }, issuer: issuer, revoker: rv, external: true, caPEM: ca}, nil
}

// serverName is this controller's bus server's name in a cluster: made
// once (ctl-HOST-XXXXXX, random) and kept in DATA/bus/server-name, since
// JetStream's replicas know their peers by name and a restarted server
// must be the same peer.
func serverName(dir string) (string, error) {
	path := filepath.Join(dir, serverNameFile)
	b, err := os.ReadFile(path)
	if err == nil {
		name := strings.TrimSpace(string(b))
		if err := bus.ValidServerName(name); err != nil {
			return "", fmt.Errorf("controller: %s: %w", path, err)
		}
		return name, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("controller: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, strings.Split(host, ".")[0])
	if len(host) > 32 {
		host = host[:32]
	}
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("controller: server name: %w", err)
	}
	name := "ctl-" + hex.EncodeToString(rnd[:])
	if host != "" {
		name = "ctl-" + host + "-" + hex.EncodeToString(rnd[:])
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("controller: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(name+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("controller: %w", err)
	}
	return name, nil
}

// serverNameFile, in the bus directory, is the bus server's name in a
// cluster (serverName).
const serverNameFile = "server-name"

// dialBus connects the controller to the bus started: at most 30 s for a
// lone or external bus (an external one tried again every second, while
// its JetStream does not answer); for a clustered one, as long as it takes a
// majority of its servers to be up (said every 10 s), unless a peer
// refuses this one (another trust root).
func dialBus(ctx context.Context, b startedBus) (*bus.ControllerConn, error) {
	if b.clustered {
		return bus.DialControllerWaiting(ctx, b.cfg, b.refused)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if b.stop == nil { // an external cluster: it may be electing its JetStream leaders
		return bus.DialControllerWaiting(dctx, b.cfg, nil)
	}
	return bus.DialController(dctx, b.cfg)
}

// busListen reads --bus-listen: port 0 means a free port, as for --listen
// (nats-server says -1 for that, and takes 0 as its default port).
func busListen(s string) (string, error) {
	if s == "" {
		return bus.DefaultListen, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("controller: --bus-listen %q: %w", s, err)
	}
	if p, err := strconv.Atoi(port); err == nil && p == 0 {
		port = "-1"
	}
	return net.JoinHostPort(host, port), nil
}

// defaultBusURL is what node credentials name when RegisterCreds is given no
// URL: the embedded bus on its default address.
const defaultBusURL = "nats://" + bus.DefaultListen

// RegisterCreds writes credsPath (mode 0600): node's credentials for the
// bus, a user of that node alone (bus.NodePermissions), minted from the
// trust root in dataDir/bus (BusDir), which must be there (a controller
// ran on dataDir): a directory without it is refused (bus.ErrNoAuthority,
// naming it), never given a trust root of its own. The credentials name
// urls (defaultBusURL when empty), the addresses agents dial: as agents on
// other machines reach the bus (its --bus-listen private address, tls://
// with TLS), which Ready.BusURLs is only on this machine. caPEM, when not
// nil, is the PEM of the CA that signed the bus's certificate (a bus with
// TLS from a private CA), carried in the credentials for the agent to
// verify it. It is `mesh node register NAME --creds FILE` on the
// controller's machine; the node's registration in the store is the
// verb's own command.
func RegisterCreds(dataDir, node, credsPath string, urls []string, caPEM []byte) error {
	_, err := MintCreds(dataDir, node, credsPath, urls, caPEM)
	return err
}

// MintCreds is RegisterCreds, and says the public key of the user it
// minted (for node.credentials-issued).
func MintCreds(dataDir, node, credsPath string, urls []string, caPEM []byte) (string, error) {
	if credsPath == "" {
		return "", errors.New("register creds: no file")
	}
	if len(urls) == 0 {
		urls = []string{defaultBusURL}
	}
	auth, err := bus.OpenAuthority(filepath.Join(dataDir, BusDir))
	if err != nil {
		return "", fmt.Errorf("register creds for %s: %w", node, err)
	}
	c, err := bus.NewCreds(auth.Issuer(), node, urls, caPEM)
	if err != nil {
		return "", fmt.Errorf("register creds for %s: %w", node, err)
	}
	pub, err := bus.UserPublicKey(c.JWT)
	if err != nil {
		return "", fmt.Errorf("register creds for %s: %w", node, err)
	}
	if err := bus.WriteCreds(credsPath, c); err != nil {
		return "", fmt.Errorf("register creds for %s: %w", node, err)
	}
	return pub, nil
}

// leadTimeout bounds how long a new leader tries to start consuming the
// reports: a clustered bus that lost the dead leader's server elects new
// JetStream leaders in seconds; beyond this the controller stops (its
// supervisor starts it again, as a standby).
const leadTimeout = 2 * time.Minute

// leadReports starts the report consumer of a controller that now leads,
// once the bucket and the stream answer (bus.Controller.Ready), trying
// again every 200 ms while the bus cannot (a clustered JetStream electing
// new leaders after a server's death): the controller leads once it can
// push and record. takeOver (it
// waited for the lock: another leader had it) first has the reports the
// last leader had in hand delivered again at once
// (bus.Controller.TakeOverReports), not when their ack wait ends.
func leadReports(ctx context.Context, bc *bus.ControllerConn, door reportDoor, takeOver bool) (func(context.Context) error, error) {
	start, said := time.Now(), time.Time{}
	for {
		// Short tries: a stream without a leader answers nothing, and a
		// try waits for its whole timeout.
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		err := bc.Ready(tctx)
		if err == nil && takeOver {
			err = bc.TakeOverReports(tctx)
		}
		cancel()
		if err == nil {
			var stop func(context.Context) error
			if stop, err = consumeReports(ctx, bc, door); err == nil {
				return stop, nil
			}
		}
		if ctx.Err() != nil || time.Since(start) > leadTimeout {
			return nil, err
		}
		if time.Since(said) > 5*time.Second {
			door.log.Warn("controller: leading: the bus's bucket or stream has no leader yet; trying again", "err", err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
