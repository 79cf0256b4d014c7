package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"meshplane/bus"
)

// startBus starts the embedded bus (or reads the external one's
// configuration): the controller's connection, the URLs agents dial, and
// how to stop the embedded server (nil for an external bus).
func startBus(cfg Config, log *slog.Logger) (bus.ControllerConfig, []string, func(context.Context) error, error) {
	if len(cfg.NATS) > 0 {
		if cfg.NATSCreds == "" {
			return bus.ControllerConfig{}, nil, nil, errors.New("controller: --nats needs --nats-creds, the controller user's .creds file")
		}
		b, err := os.ReadFile(cfg.NATSCreds)
		if err != nil {
			return bus.ControllerConfig{}, nil, nil, fmt.Errorf("controller: nats creds: %w", err)
		}
		u, err := bus.ParseNATSCreds(b)
		if err != nil {
			return bus.ControllerConfig{}, nil, nil, fmt.Errorf("controller: nats creds %s: %w", cfg.NATSCreds, err)
		}
		var ca []byte
		if cfg.NATSCA != "" {
			if ca, err = os.ReadFile(cfg.NATSCA); err != nil {
				return bus.ControllerConfig{}, nil, nil, fmt.Errorf("controller: nats ca: %w", err)
			}
		}
		return bus.ControllerConfig{URLs: cfg.NATS, User: u, CA: ca, Logger: log}, cfg.NATS, nil, nil
	}
	listen, err := busListen(cfg.BusListen)
	if err != nil {
		return bus.ControllerConfig{}, nil, nil, err
	}
	srv, err := bus.StartServer(bus.ServerConfig{
		Dir: filepath.Join(cfg.Data, BusDir), Listen: listen,
		TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, Insecure: cfg.Insecure, Logger: log,
		Revoked: cfg.join.revokedList(),
	})
	if err != nil {
		return bus.ControllerConfig{}, nil, nil, fmt.Errorf("controller: %w", err)
	}
	cfg.join.set(srv)
	cc, err := srv.Controller(log)
	if err != nil {
		srv.Shutdown(context.Background())
		return bus.ControllerConfig{}, nil, nil, fmt.Errorf("controller: %w", err)
	}
	return cc, []string{srv.URL()}, srv.Shutdown, nil
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
