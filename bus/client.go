package bus

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrUnreachable means no connection to the bus could be made.
var ErrUnreachable = errors.New("bus: unreachable")

// dialConfig is what a connection is made of, for a node or the controller.
type dialConfig struct {
	name      string
	urls      []string
	user      User
	ca        []byte
	inbox     string
	inProcess nats.InProcessConnProvider
	logger    *slog.Logger
	timeout   time.Duration
	// reconnected, if set, is called after each reconnection.
	reconnected func()
	// closed, if set, is called once the connection is closed for good.
	closed func()
	// noBuffer makes a publish fail at once while the connection is down,
	// instead of being buffered and sent on reconnection: an agent's report
	// must be taken now or kept and sent again, counted late (rule 8).
	noBuffer bool
}

// PingEvery is how often a bus client pings its server: a client whose
// server stops answering (its link down) gives it up after two pings
// unanswered, 4 to 6 s, and reconnects to another of its URLs.
const PingEvery = 2 * time.Second

// dial connects: it retries for ever once connected (a bus that went away
// and came back is reconnected to, and JetStream's consumers resume), but
// the first connection fails at once, so a caller learns a wrong URL or
// credentials.
func dial(cfg dialConfig) (*nats.Conn, error) {
	if len(cfg.urls) == 0 && cfg.inProcess == nil {
		return nil, fmt.Errorf("%w: no URL", ErrUnreachable)
	}
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := cfg.timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	opts := []nats.Option{
		nats.Name(cfg.name),
		nats.UserJWTAndSeed(cfg.user.JWT, cfg.user.Seed),
		nats.CustomInboxPrefix(cfg.inbox),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		// A server behind a partition sends no FIN: only pings find it
		// gone. NATS's default (every 2 min, 2 outstanding) leaves a
		// client on it for 4 to 6 min; this, 2 to 3 times PingEvery.
		nats.PingInterval(PingEvery),
		nats.MaxPingsOutstanding(2),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("bus: connection error", "conn", cfg.name, "subject", subj, "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("bus: disconnected", "conn", cfg.name, "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("bus: reconnected", "conn", cfg.name, "url", nc.ConnectedUrlRedacted())
			if cfg.reconnected != nil {
				cfg.reconnected()
			}
		}),
	}
	if cfg.closed != nil {
		opts = append(opts, nats.ClosedHandler(func(*nats.Conn) { cfg.closed() }))
	}
	if len(cfg.ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.ca) {
			return nil, fmt.Errorf("bus: dial %s: the CA holds no PEM certificate", cfg.name)
		}
		opts = append(opts, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	if cfg.noBuffer {
		opts = append(opts, nats.ReconnectBufSize(-1))
	}
	if cfg.inProcess != nil {
		opts = append(opts, nats.InProcessServer(cfg.inProcess))
	}
	nc, err := nats.Connect(strings.Join(cfg.urls, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s at %s: %w", ErrUnreachable, cfg.name, strings.Join(cfg.urls, ","), err)
	}
	return nc, nil
}
