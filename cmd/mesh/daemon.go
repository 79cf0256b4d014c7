package main

// The controller process (`mesh up`) and node credentials (`mesh node
// register --creds`), assembled from the packages without any CLI
// framework: the verbs parse flags into controllerConfig and call
// runController and registerCreds.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"meshplane/agent"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/pgstore"
	"meshplane/events/storeurl"
	"meshplane/internal/safego"
	"meshplane/metrics"
	"meshplane/web"
)

// defaultAPIListen is where the API listens unless --listen says otherwise.
const defaultAPIListen = "127.0.0.1:7480"

// reportWorkers is how many reports the controller records at once (each
// node's in order): reports that arrive together are then appended
// together, in one commit of the store (group commit), instead of one
// commit, and one fsync, each.
const reportWorkers = 16

// Files and directories a controller keeps in its data directory.
const (
	storeFile = storeurl.File // the event store (bbolt)
	busDir    = "bus"         // the embedded bus: trust root seeds and JetStream files
)

// controllerConfig is what `mesh up` runs with, one field per flag.
type controllerConfig struct {
	// Data is the data directory (--data): DATA/events.db (the event store,
	// opened for writing and held locked while the controller runs),
	// DATA/api-token (made on first start, mode 0600), DATA/bus (the
	// embedded bus's keys and JetStream files) and DATA/controller.json
	// (while running). Required; made if missing.
	Data string

	// Store is the event store's URL (--store): "" or "bolt" for
	// DATA/events.db, held locked (one controller per file); postgres://...
	// for PostgreSQL, where several controllers may run on one database and
	// elect a leader with the store's advisory lock (see leadOnLock);
	// esdb://... for KurrentDB (one controller: it has no leader lock).
	Store string

	// Listen is the API's host:port (--listen); defaultAPIListen when empty.
	// Port 0 picks a free port (Ready says which).
	Listen string
	// TLSCert and TLSKey (--tls-cert, --tls-key) are PEM files: the API and
	// the embedded bus then speak only TLS. Beyond loopback both need them,
	// unless Insecure (--insecure) says otherwise out loud.
	TLSCert, TLSKey string
	Insecure        bool

	// BusListen is the embedded bus's host:port (--bus-listen);
	// bus.DefaultListen when empty. Port 0 (or -1) picks a free port.
	// Agents on other machines need the private address here.
	BusListen string
	// NATS (--nats URL, repeatable) uses an existing NATS cluster instead of
	// the embedded bus; NATSCreds (--nats-creds) is then the controller
	// user's .creds file (required), and NATSCA (--nats-ca) a PEM file of
	// the cluster's CA when it is a private one. See package bus for the
	// accounts and permissions to set up there.
	NATS      []string
	NATSCreds string
	NATSCA    string

	// Interval is how often every node is composed and what changed pushed
	// (--interval); controller.DefaultInterval (5m) when zero.
	Interval time.Duration
	// Version is reported by the API's info.
	Version string
	// Logger gets the controller's log; nil means text on stderr.
	Logger *slog.Logger
	// Ready, if set, is called once the controller serves: with where the
	// API and the bus are (the verb prints it; tests dial it).
	Ready func(controllerReady)
	// Recorded, if set, is called after each report is recorded (or found
	// recorded before), from the consumer's goroutine. Benchmarks use it.
	Recorded func(bus.Report)
	// Pushed, if set, is called after each declaration is put on the bus.
	// Benchmarks use it.
	Pushed func(declaration.Declaration)
	// ReportLimit is each node's report rate limit on the bus
	// (bus.RateLimit); zero: the bus's defaults (1 a second, bursts of 64,
	// said once a minute). Tests lower it.
	ReportLimit bus.RateLimit
}

// controllerReady says where a running controller can be reached.
type controllerReady struct {
	APIURL  string // http(s)://host:port of the API
	Listen  string // the API's listening address
	BusURLs []string
	Token   string // the API token (DATA/api-token)
}

// errStoreHeld is runController's error when another process holds the
// store: a controller already running, or a CLI verb writing.
var errStoreHeld = errors.New("the event store is held by another process (a controller already running, or a CLI writing)")

// runController runs the controller in the foreground until ctx ends (the
// caller turns SIGINT and SIGTERM into that), then stops cleanly: the API
// stops taking requests and finishes those in flight, the report consumer
// finishes the report in hand, the projections stop, the bus and the store
// close, and DATA/controller.json is removed. It returns nil after a clean
// stop, and an error if it cannot start or a part fails while running (the
// rest is then stopped the same way).
//
// Reports: each report the bus hands over is recorded once through
// controller.RecordReport (its apply id is the event's id), the report
// door; one it refuses, and one the bus consumer refuses as it decodes it
// (too large, not decoding, another node's), is recorded as report.refused
// on its node's stream (nothing for a node that is not registered),
// counted (meshplane_reports_refused_total), logged once and terminated;
// each node's reports are rate-limited on the bus, what is deferred counted
// and said once a minute (report.throttled); nothing a node sends stops the
// controller (reportDoor).
//
// Panics (package safego): a handler's (a report, a request, a node's push,
// an interval pass) is logged with its stack and counted, and the
// controller carries on. A loop's (the core's run, the projections, the
// API's server, the leader's wait) is its error: the controller stops as
// for any failure and runController returns it (mesh: exit 70). The
// metrics follower's stops the process through safego.Fatal.
func runController(ctx context.Context, cfg controllerConfig) (err error) {
	if cfg.Data == "" {
		return errors.New("controller: no data directory")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	listen := cfg.Listen
	if listen == "" {
		listen = defaultAPIListen
	}
	withTLS := cfg.TLSCert != "" || cfg.TLSKey != ""
	if withTLS && (cfg.TLSCert == "" || cfg.TLSKey == "") {
		return errors.New("controller: give both --tls-cert and --tls-key")
	}
	if err := httpapi.CheckListen(listen, withTLS, cfg.Insecure); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := os.MkdirAll(cfg.Data, 0o755); err != nil {
		return fmt.Errorf("controller: %w", err)
	}

	// Every part started is stopped in reverse order on the way out.
	var stops []func(context.Context) error
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for i := len(stops) - 1; i >= 0; i-- {
			if serr := stops[i](sctx); serr != nil {
				log.Error("controller: stop", "err", serr)
				err = errors.Join(err, serr)
			}
		}
		if err == nil {
			log.Info("controller: stopped")
		}
	}()

	store, lock, err := openControllerStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	stops = append(stops, func(context.Context) error { return store.Close() })
	cm := newControllerMetrics()

	token, err := httpapi.LoadOrCreateToken(cfg.Data)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}

	busCfg, busURLs, stopBus, err := startBus(cfg, log)
	if err != nil {
		return err
	}
	if stopBus != nil {
		stops = append(stops, stopBus)
	}
	busCfg.ReportWorkers = reportWorkers
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	bc, err := bus.DialController(dctx, busCfg)
	cancel()
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	stops = append(stops, func(context.Context) error { bc.Close(); return nil })

	var pub controller.Publisher = bc.Publisher()
	if cfg.Pushed != nil {
		pub = notifyingPublisher{pub, cfg.Pushed}
	}
	ctl, err := controller.New(controller.Config{
		Store: cm.store(store), Publisher: pub, Interval: cfg.Interval,
		Version: cfg.Version, Logger: log, Standby: lock != nil,
	})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}

	// The core runs (projections live, interval passes) until runCtx ends.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	runDone := make(chan error, 1)
	go func() {
		runDone <- safego.Call("controller.run", log, func() error { return ctl.Run(runCtx) })
	}()
	stops = append(stops, func(context.Context) error { stopRun(); return <-runDone })
	if err := waitRunning(ctx, ctl, runDone); err != nil {
		return err
	}
	stops = append(stops, cm.start(ctx, ctl, store, log))

	// Reports, recorded with a context that outlives ctx until the
	// consumer has finished the one in hand. Under a leader lock, only
	// once it is held (leadOnLock).
	leadLost := make(chan error, 1)
	door := reportDoor{ctl: ctl, recorded: cfg.Recorded, metrics: cm.m, limit: cfg.ReportLimit, log: log}
	if lock == nil {
		stopConsumer, err := consumeReports(ctx, bc, door)
		if err != nil {
			return err
		}
		stops = append(stops, stopConsumer)
	} else {
		// A lock that is free is taken before the controller says it
		// serves, so that a lone controller leads from its first request;
		// one held elsewhere is waited for in the background.
		held, _, err := lock.TryLeader(ctx) // nil unless taken
		if err != nil {
			return fmt.Errorf("controller: leader lock: %w", err)
		}
		leadCtx, stopLead := context.WithCancel(context.WithoutCancel(ctx))
		leadDone := make(chan struct{})
		leading := make(chan struct{})
		go func() {
			defer close(leadDone)
			lerr := safego.Call("controller.lead", log, func() error {
				return leadOnLock(leadCtx, lock, held, leading, bc, door)
			})
			if lerr != nil {
				leadLost <- lerr
			}
		}()
		stops = append(stops, func(context.Context) error { stopLead(); <-leadDone; return nil })
		if held != nil {
			select {
			case <-leading:
			case <-leadDone:
				select {
				case lerr := <-leadLost:
					return fmt.Errorf("controller: %w", lerr)
				default:
					return fmt.Errorf("controller: stopped before leading: %w", context.Cause(ctx))
				}
			}
		}
	}

	// The API.
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("controller: listen %s: %w", listen, err)
	}
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	// The API under /v1, the page (package web) at /: one origin, one token.
	// The page's event streams end with serveCtx, so that stopping does not
	// wait for them.
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.Handler(ctl, token, httpapi.WithLogger(log)))
	mux.Handle("/", web.Handler(ctl, token, web.Options{Feed: ctl, Logger: log, Done: serveCtx.Done()}))
	go func() {
		served <- safego.Call("api.serve", log, func() error {
			return httpapi.Serve(serveCtx, ln, cm.handler(mux, token),
				httpapi.ServeOptions{TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, Insecure: cfg.Insecure, Logger: log})
		})
	}()
	stops = append(stops, func(context.Context) error { stopServe(); return <-served })

	scheme := "http"
	if withTLS {
		scheme = "https"
	}
	addr := ln.Addr().String()
	ready := controllerReady{APIURL: scheme + "://" + addr, Listen: addr, BusURLs: busURLs, Token: token}
	removeInfo, err := controller.WriteInfo(cfg.Data, controller.Info{Listen: addr, URL: ready.APIURL})
	if err != nil {
		return err
	}
	stops = append(stops, func(context.Context) error { return removeInfo() })

	log.Info("controller: serving", "api", ready.APIURL, "bus", busURLs, "data", cfg.Data)
	if cfg.Ready != nil {
		cfg.Ready(ready)
	}
	select {
	case <-ctx.Done():
		log.Info("controller: stopping", "cause", context.Cause(ctx))
		return nil
	case rerr := <-runDone:
		runDone <- rerr // for its stop
		return fmt.Errorf("controller: stopped running: %w", rerr)
	case serr := <-served:
		served <- serr
		return fmt.Errorf("controller: the API stopped: %w", serr)
	case lerr := <-leadLost:
		// A leader whose lock is lost stops at once: another controller
		// may be leading already. Its supervisor starts it again, as a
		// standby.
		return fmt.Errorf("controller: %w", lerr)
	}
}

// leaderLock is a store's leader election (pgstore.Store's).
type leaderLock interface {
	AcquireLeader(ctx context.Context) (*pgstore.Leader, error)
	TryLeader(ctx context.Context) (*pgstore.Leader, bool, error)
}

var _ leaderLock = (*pgstore.Store)(nil)

// openControllerStore opens the event store cfg names for writing: the
// bolt file in the data directory (locked while open), or the store at
// cfg.Store's URL (a PostgreSQL database is migrated to this build's
// schema first). lock is the store's leader election when several
// controllers may share it (PostgreSQL), else nil: the controller leads at
// once.
func openControllerStore(ctx context.Context, cfg controllerConfig, log *slog.Logger) (events.Store, leaderLock, error) {
	s, err := storeurl.Open(ctx, cfg.Store, storeurl.Options{Data: cfg.Data, Create: true, Logger: log})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, nil, fmt.Errorf("controller: %w: %w", errStoreHeld, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("controller: %w", err)
	}
	if ps, ok := s.(*pgstore.Store); ok {
		return s, ps, nil
	}
	return s, nil, nil
}

// consumeReports starts recording the bus's reports through door, and
// returns the function that stops it (after the report in hand).
func consumeReports(ctx context.Context, bc *bus.Controller, door reportDoor) (func(context.Context) error, error) {
	log := door.log
	recCtx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
	consumer, err := bc.ConsumeReports(recCtx, door.handler(), door.options()...)
	if err != nil {
		stopRec()
		return nil, fmt.Errorf("controller: %w", err)
	}
	return func(sctx context.Context) error {
		defer stopRec()
		serr := consumer.Stop(sctx)
		st := consumer.Stats()
		log.Info("controller: reports", "recorded", st.Recorded, "retried", st.Retried, "refused", st.Refused, "rejected", st.Rejected, "deferred", st.Deferred)
		return serr
	}, nil
}

// leadOnLock is a standby's wait to lead: it blocks until this process
// holds the store's leader lock (held on a connection of its own, so it
// ends with the process: a leader killed with SIGKILL frees it at once),
// then leads (ctl.Lead: pushes and writes; the report consumer starts)
// until ctx ends (nil, the lock released) or the lock is lost (an error:
// the controller must stop).
//
// The controller stays a standby meanwhile: its projections follow the
// store's subscription, its API answers reads and refuses writes
// (api.CodeStandby).
//
// A lock already held (taken by TryLeader) is passed as l: the wait is
// skipped. leading is closed once the controller leads.
func leadOnLock(ctx context.Context, lock leaderLock, l *pgstore.Leader, leading chan<- struct{}, bc *bus.Controller, door reportDoor) error {
	ctl, log := door.ctl, door.log
	if l == nil {
		log.Info("controller: standby: waiting for the store's leader lock")
		var err error
		if l, err = lock.AcquireLeader(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("leader lock: %w", err)
		}
	}
	defer l.Release()
	stopConsumer, err := consumeReports(ctx, bc, door)
	if err != nil {
		return err
	}
	ctl.Lead()
	close(leading)
	log.Info("controller: leading (holds the store's leader lock)")
	select {
	case <-ctx.Done():
	case <-l.Lost():
		err = fmt.Errorf("lost the store's leader lock: %w", l.Err())
		log.Error("controller: " + err.Error())
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return errors.Join(err, stopConsumer(sctx))
}

// startBus starts the embedded bus (or reads the external one's
// configuration): the controller's connection, the URLs agents dial, and
// how to stop the embedded server (nil for an external bus).
func startBus(cfg controllerConfig, log *slog.Logger) (bus.ControllerConfig, []string, func(context.Context) error, error) {
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
		Dir: filepath.Join(cfg.Data, busDir), Listen: listen,
		TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, Insecure: cfg.Insecure, Logger: log,
	})
	if err != nil {
		return bus.ControllerConfig{}, nil, nil, fmt.Errorf("controller: %w", err)
	}
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

// waitRunning waits until ctl.Run has started (so that reports recorded
// from now on wait on the live projections, never fold beside them).
func waitRunning(ctx context.Context, ctl *controller.Controller, runDone chan error) error {
	for {
		info, err := ctl.Info(ctx)
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		if info.Role == api.RoleLeader || (info.Role == api.RoleStandby && ctl.Running()) {
			return nil
		}
		select {
		case rerr := <-runDone:
			runDone <- rerr
			return fmt.Errorf("controller: did not start: %w", rerr)
		case <-ctx.Done():
			return nil // stopping before it started: the stops clean up
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// reportDoor wires the bus's report consumer to the controller (the door
// itself is commands.Handler.RecordApply, behind controller.RecordReport)
// and to the metrics.
type reportDoor struct {
	ctl      *controller.Controller
	recorded func(bus.Report)    // nil: not told
	metrics  *metrics.Controller // nil: not counted
	limit    bus.RateLimit
	log      *slog.Logger
}

// handler records each report through the controller: once per apply id,
// with report.delivered-late when it carries failed attempts. A report the
// door refuses (recorded as report.refused) or of a node that is not
// registered is rejected with its reason, counted, never retried; any
// other failure (the store) has it redelivered.
func (d reportDoor) handler() bus.Handler {
	return func(ctx context.Context, r bus.Report) error {
		_, err := d.ctl.RecordReport(ctx, deliveryOf(r))
		var rej *commands.Rejection
		if errors.As(err, &rej) && rej.Code == api.CodeStandby {
			return err // not this controller's to record: again later
		}
		if errors.Is(err, commands.ErrRejected) {
			reason := refusalReason(err)
			d.refused(reason)
			return bus.RejectFor(reason, err)
		}
		if err == nil && d.recorded != nil {
			d.recorded(r)
		}
		return err
	}
}

// options are the consumer's refusal and rate-limit callbacks.
func (d reportDoor) options() []bus.ConsumeOption {
	return []bus.ConsumeOption{
		bus.WithRateLimit(d.limit),
		bus.WithRefused(func(ctx context.Context, f bus.Refused) error {
			_, err := d.ctl.RecordRefusal(ctx, commands.RefusedReport{
				Node: f.Node, Reason: f.Reason, Detail: f.Err.Error(), Size: f.Size, Digest: f.Digest,
			})
			var rej *commands.Rejection
			if err != nil && (!errors.Is(err, commands.ErrRejected) || errors.As(err, &rej) && rej.Code == api.CodeStandby) {
				return err // the store, or not this controller's to record: the message comes again
			}
			d.refused(f.Reason) // recorded, or a node with no stream: counted all the same
			return nil
		}),
		bus.WithThrottled(func(ctx context.Context, t bus.Throttled) {
			if d.metrics != nil {
				d.metrics.ReportsDeferred(t.Deferred)
			}
			if _, err := d.ctl.RecordThrottled(ctx, commands.Throttled{
				Node: t.Node, Deferred: t.Deferred, From: t.From, To: t.To, Rate: t.Rate, Burst: t.Burst,
			}); err != nil && !errors.Is(err, commands.ErrRejected) {
				d.log.Warn("controller: throttled reports not recorded", "node", t.Node, "err", err)
			}
		}),
	}
}

func (d reportDoor) refused(reason string) {
	if d.metrics != nil {
		d.metrics.ReportRefused(reason)
	}
}

// refusalReason is the reason a rejected report is refused for: the door's
// (a *commands.Refusal), or unknown-node.
func refusalReason(err error) string {
	var ref *commands.Refusal
	if errors.As(err, &ref) {
		return ref.Reason
	}
	var rej *commands.Rejection
	if errors.As(err, &rej) && rej.Code == commands.CodeNodeUnknown {
		return events.RefusedUnknownNode
	}
	return events.RefusedMalformed
}

// deliveryOf is a report off the bus as the write side takes it.
func deliveryOf(r bus.Report) commands.Delivery {
	return commands.Delivery{
		Report: r.Outcome, ApplyID: r.ApplyID, AppliedAt: r.AppliedAt,
		Correlation: r.Correlation, Attempts: r.Attempts, LastError: r.LastError,
		Size: r.Size, Digest: r.Digest,
	}
}

// notifyingPublisher tells pushed about each declaration put.
type notifyingPublisher struct {
	controller.Publisher
	pushed func(declaration.Declaration)
}

func (p notifyingPublisher) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	if err := p.Publisher.PutDeclaration(ctx, d); err != nil {
		return err
	}
	p.pushed(d)
	return nil
}

// The controller is the page's feed of changes (checked here: the
// controller does not link the page).
var _ web.Feed = (*controller.Controller)(nil)

// DryRun forwards to the wrapped publisher's dry runs, when it has them.
func (p notifyingPublisher) DryRun(ctx context.Context, d declaration.Declaration) (agent.Preview, error) {
	dr, ok := p.Publisher.(controller.DryRunner)
	if !ok {
		return agent.Preview{}, fmt.Errorf("no dry runs on this bus")
	}
	return dr.DryRun(ctx, d)
}

// The bus adapter is the controller core's Publisher (checked here: bus
// does not link the controller).
var (
	_ controller.Publisher = bus.DeclarationPublisher{}
	_ controller.DryRunner = bus.DeclarationPublisher{} // mesh plan asks the agents over the bus
)

// defaultBusURL is what node credentials name when registerCreds is given no
// URL: the embedded bus on its default address.
const defaultBusURL = "nats://" + bus.DefaultListen

// registerCreds writes credsPath (mode 0600): node's credentials for the
// bus, a user of that node alone (bus.NodePermissions), minted from the
// trust root in dataDir/bus (made there if the controller never ran) and
// naming urls (defaultBusURL when empty), the addresses agents dial: as
// agents on other machines reach the bus (its --bus-listen private address,
// tls:// with TLS), which controllerReady.BusURLs is only on this machine. It is
// `mesh node register NAME --creds FILE`; the node's registration in the
// store is the verb's own command. A bus with TLS from a private CA needs
// registerCredsCA.
func registerCreds(dataDir, node, credsPath string, urls []string) error {
	return registerCredsCA(dataDir, node, credsPath, urls, nil)
}

// registerCredsCA is registerCreds with the PEM of the CA that signed the
// bus's certificate, carried in the credentials for the agent to verify it.
func registerCredsCA(dataDir, node, credsPath string, urls []string, caPEM []byte) error {
	if credsPath == "" {
		return errors.New("register creds: no file")
	}
	if len(urls) == 0 {
		urls = []string{defaultBusURL}
	}
	auth, err := bus.LoadAuthority(filepath.Join(dataDir, busDir))
	if err != nil {
		return fmt.Errorf("register creds for %s: %w", node, err)
	}
	c, err := bus.NewCreds(auth.Issuer(), node, urls, caPEM)
	if err != nil {
		return fmt.Errorf("register creds for %s: %w", node, err)
	}
	if err := bus.WriteCreds(credsPath, c); err != nil {
		return fmt.Errorf("register creds for %s: %w", node, err)
	}
	return nil
}
