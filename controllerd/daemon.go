package controllerd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/pgstore"
	"meshplane/events/storeurl"
	"meshplane/internal/safego"
	"meshplane/web"
)

// defaultAPIListen is where the API listens unless --listen says otherwise.
const defaultAPIListen = "127.0.0.1:7480"

// reportWorkers is how many reports the controller records at once (each
// node's in order): reports that arrive together are then appended
// together, in one commit of the store (group commit), instead of one
// commit, and one fsync, each.
const reportWorkers = 16

// BusDir is the embedded bus's directory in the data directory: the trust
// root's seeds (which RegisterCreds mints node credentials from) and the
// JetStream files.
const BusDir = "bus"

// Config is what `mesh up` runs with, one field per flag.
type Config struct {
	// Data is the data directory (--data): DATA/events.db (the event store,
	// opened for writing and held locked while the controller runs),
	// DATA/api-token (made on first start, mode 0600), DATA/bus (the
	// embedded bus's keys and JetStream files), DATA/checkpoints/controller
	// (the projections' checkpoints: CheckpointDir) and
	// DATA/controller.json (while running). Required; made if missing.
	Data string

	// Store is the event store's URL (--store): "" or "bolt" for
	// DATA/events.db, held locked (one controller per file); postgres://...
	// for PostgreSQL, where several controllers may run on one database and
	// elect a leader with the store's advisory lock (see leadOnLock);
	// esdb://... for KurrentDB (one controller: it has no leader lock).
	Store string

	// Leadership, if set, is the leader election this controller takes
	// part in instead of its store's own: it starts a standby, and leads
	// once it holds the lock. nil: the store's (a PostgreSQL store's
	// advisory lock), or none for a store that has none (bolt, KurrentDB),
	// and the controller leads at once. Tests set a fake.
	Leadership Leadership

	// Listen is the API's host:port (--listen); defaultAPIListen when empty.
	// Port 0 picks a free port (Ready says which).
	Listen string
	// TLSCert and TLSKey (--tls-cert, --tls-key) are PEM files: the API and
	// the embedded bus then speak only TLS. Beyond loopback both need them,
	// unless Insecure (--insecure) says otherwise out loud.
	TLSCert, TLSKey string
	Insecure        bool
	// AdvertiseURL is the API URL join tokens name (how hosts reach the
	// controller); empty: the URL it serves at, an unspecified host
	// replaced by the machine's host name.
	AdvertiseURL string

	// join is Run's wiring of the bus for joining (join.go).
	join *joinWiring

	// BusListen is the embedded bus's host:port (--bus-listen);
	// bus.DefaultListen when empty. Port 0 (or -1) picks a free port.
	// Agents on other machines need the private address here.
	BusListen string
	// BusCluster (--bus-cluster) is where the embedded bus listens for its
	// peers' routes: with it the bus is one server of a NATS cluster
	// (bus.ClusterName), JetStream clustered, the controllers sharing a
	// store each running one; BusPeers (--bus-peers) are the other
	// controllers' route URLs (nats-route://host:port). The server's name
	// is made once in DATA/bus/server-name. Routes use the API's TLS
	// (TLSCert, TLSKey) and verify peers against TLSCA (--tls-ca).
	BusCluster string
	BusPeers   []string
	// BusTrust (--bus-trust) is a directory holding the bus's trust root
	// (the seeds operator.nk, system-account.nk, mesh-account.nk), read and
	// never made there: every controller of a cluster is given a copy of
	// the first one's DATA/bus seeds. Empty: DATA/bus, made on first start.
	BusTrust string
	// BusReplicas (--bus-replicas) is the replica count of the bucket and
	// the stream; 0: bus.DefaultReplicas of the servers (1+len(BusPeers),
	// or len(NATS)): 3 from three servers on, else 1.
	BusReplicas int
	// TLSCA (--tls-ca) is a PEM file of the private CA that signed
	// TLSCert and the bus peers' certificates: peers' routes are verified
	// against it, its fingerprint goes in join tokens, GET /v1/join/ca
	// serves it, and node credentials carry it. Empty: the system's roots
	// for peers, and for joins the last certificate of TLSCert when it is a
	// chain, TLSCert itself when it is self-signed, else none (a public
	// CA).
	TLSCA string
	// NATS (--nats URL, repeatable) uses an existing NATS cluster instead of
	// the embedded bus; NATSCreds (--nats-creds) is then the controller
	// user's .creds file (required), NATSCA (--nats-ca) a PEM file of the
	// cluster's CA when it is a private one, and NATSAccountSeed
	// (--nats-account-seed) a file holding a signing key seed (SA...) of
	// the mesh account, the controller user's account, with which the
	// controller mints node users. NATSOperatorSeed (--nats-operator-seed,
	// an operator signing key's seed, SO...) and NATSSystemCreds
	// (--nats-system-creds, a system account user's .creds) go together:
	// with them mesh node revoke pushes the account's revocation list to
	// the cluster (bus.ExternalRevoker); without them it is recorded only.
	// `mesh bus account` makes all of them and the servers' configuration;
	// see package bus.
	NATS             []string
	NATSCreds        string
	NATSCA           string
	NATSAccountSeed  string
	NATSOperatorSeed string
	NATSSystemCreds  string

	// Interval is how often every node is composed and what changed pushed
	// (--interval); controller.DefaultInterval (5m) when zero.
	Interval time.Duration
	// SilentAfter (--silent-after) is how long a node may go without a
	// heartbeat before status says it is unreachable and the leader
	// records node.went-silent; controller.DefaultSilentAfter (30s) when
	// zero.
	SilentAfter time.Duration
	// ChainLogEvery is how often the store's hash chain head is logged
	// ("store: chain head", head=LINE); DefaultChainLogEvery (10m) when
	// zero, never when negative.
	ChainLogEvery time.Duration
	// DeferDefines makes a module definition wait for an explicit push
	// (--push-on-define=false; controller.Config.DeferDefines).
	DeferDefines bool
	// Version is reported by the API's info.
	Version string
	// Logger gets the controller's log; nil means text on stderr.
	Logger *slog.Logger
	// Ready, if set, is called once the controller serves: with where the
	// API and the bus are (the verb prints it; tests dial it).
	Ready func(Ready)
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

// Ready says where a running controller can be reached.
type Ready struct {
	// APIURL is http(s)://host:port of the API as a client on this
	// machine dials it: loopback when the API listens on every address.
	APIURL string
	Listen string // the API's listening address, as listened on
	// BusURLs are the bus's URLs as a client on this machine dials them
	// (loopback when the bus listens on every address): the agents `mesh
	// up` starts here are given these.
	BusURLs []string
	// AgentBusURLs are what DATA/bus-urls records for credentials carried
	// to agents here or on other hosts: BusURLs, and when the embedded
	// bus listens on every address, its URL at each address of the
	// machine's interfaces after the loopback one.
	AgentBusURLs []string
	Token        string // the API token (DATA/api-token)
}

// ErrStoreHeld is Run's error when another process holds the
// store: a controller already running, or a CLI verb writing.
var ErrStoreHeld = errors.New("the event store is held by another process (a controller already running, or a CLI writing)")

// Run runs the controller in the foreground until ctx ends (the
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
// for any failure and Run returns it (mesh: exit 70). The
// metrics follower's stops the process through safego.Fatal.
func Run(ctx context.Context, cfg Config) (err error) {
	p, err := open(ctx, cfg)
	if p != nil {
		defer func() { err = p.close(ctx, err) }()
	}
	if err != nil {
		return err
	}
	return p.wait(ctx)
}

// process is the controller process as open starts it, part by part:
// every part started is stopped in reverse order by close.
type process struct {
	cfg     Config
	log     *slog.Logger
	listen  string
	withTLS bool
	stops   []func(context.Context) error

	store    events.Store
	lock     Leadership // nil: no leader lock, it leads
	walked   <-chan error
	cm       *controllerMetrics
	token    string
	caPEM    []byte
	ctl      *controller.Controller
	pub      *laterPublisher
	revoked  map[string]time.Time
	sb       startedBus
	bc       *bus.ControllerConn
	busURLs  []string
	runDone  chan error
	leadLost chan error
	leadsNow bool // takes writes from its first request
	served   chan error
}

// open checks cfg and starts the controller's parts in order: the store,
// the core, the bus, the core's run, the report door, the API; then says
// it serves. What it returns is closed by close, even with an error.
func open(ctx context.Context, cfg Config) (*process, error) {
	p, err := checkConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, step := range []func(context.Context) error{
		p.openStore, p.openCore, p.openBus, p.runCore, p.openDoor, p.serveAPI,
	} {
		if err := step(ctx); err != nil {
			return p, err
		}
	}
	return p, nil
}

// checkConfig checks what cfg says before anything starts.
func checkConfig(cfg Config) (*process, error) {
	if cfg.Data == "" {
		return nil, errors.New("controller: no data directory")
	}
	p := &process{cfg: cfg, log: cfg.Logger, listen: cmp.Or(cfg.Listen, defaultAPIListen)}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	p.withTLS = cfg.TLSCert != "" || cfg.TLSKey != ""
	if p.withTLS && (cfg.TLSCert == "" || cfg.TLSKey == "") {
		return nil, errors.New("controller: give both --tls-cert and --tls-key")
	}
	if err := httpapi.CheckListen(p.listen, p.withTLS, cfg.Insecure); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if err := os.MkdirAll(cfg.Data, 0o755); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return p, nil
}

// close stops every part started, in reverse order, and returns err
// joined with what stopping failed with.
func (p *process) close(ctx context.Context, err error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for i := len(p.stops) - 1; i >= 0; i-- {
		if serr := p.stops[i](sctx); serr != nil {
			p.log.Error("controller: stop", "err", serr)
			err = errors.Join(err, serr)
		}
	}
	if err == nil {
		p.log.Info("controller: stopped")
	}
	return err
}

// openStore opens the event store (and its leader lock), watches its
// file's walk, and reads the API token, the CA and the secret key.
func (p *process) openStore(ctx context.Context) error {
	store, lock, err := openControllerStore(ctx, p.cfg, p.log)
	if err != nil {
		return err
	}
	p.store, p.lock = store, lock
	p.stops = append(p.stops, func(context.Context) error { return store.Close() })
	p.walked = watchWalk(ctx, store, p.log)
	p.cm = newControllerMetrics(p.cfg.Version)
	if p.token, err = httpapi.LoadOrCreateToken(p.cfg.Data); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	p.caPEM, err = loadCA(p.cfg, p.log)
	return err
}

// openCore makes the controller and resumes it. It is made and resumed
// before the bus, so that the bus starts with the revocation list of the
// resumed projections: a restart reads the events after the checkpoint,
// not the whole store.
func (p *process) openCore(ctx context.Context) error {
	key, err := secretKey(p.cfg.Data)
	if err != nil {
		return err
	}
	p.pub = &laterPublisher{}
	cfg := p.cfg
	p.ctl, err = controller.New(controller.Config{
		Store: p.cm.store(p.store), Publisher: p.pub, Interval: cfg.Interval, DeferDefines: cfg.DeferDefines, SecretKey: key,
		Version: cfg.Version, Logger: p.log, Standby: p.lock != nil,
		SilentAfter: cmp.Or(cfg.SilentAfter, controller.DefaultSilentAfter),
		Checkpoints: controllerCheckpoints(cfg.Data, p.log),
	})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := resume(ctx, p.ctl, p.log); err != nil {
		return err
	}
	if p.revoked, err = p.ctl.Revocations(ctx); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	return nil
}

// openBus starts the bus (or reaches the external one), dials it, and
// gives the controller its publisher, the heartbeats and the secrets.
func (p *process) openBus(ctx context.Context) error {
	p.cfg.join = &joinWiring{revoked: p.revoked}
	sb, err := startBus(p.cfg, p.log)
	if err != nil {
		return err
	}
	p.sb = sb
	if sb.stop != nil {
		p.stops = append(p.stops, sb.stop)
	}
	p.sb.cfg.ReportWorkers = reportWorkers
	bc, err := dialBus(ctx, p.sb)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	p.bc, p.busURLs = bc, p.sb.urls()
	p.stops = append(p.stops, func(context.Context) error { bc.Close(); return nil })
	if p.cfg.Pushed != nil {
		p.pub.set(notifyingPublisher{bc.Publisher(), p.cfg.Pushed})
	} else {
		p.pub.set(bc.Publisher())
	}
	stopHeard, err := hearHeartbeats(bc, p.ctl, p.log)
	if err != nil {
		return err
	}
	p.stops = append(p.stops, stopHeard)
	stopSecrets, err := serveSecrets(bc, p.ctl, p.log)
	if err != nil {
		return err
	}
	p.stops = append(p.stops, stopSecrets)
	return nil
}

// runCore runs the core (projections live, interval passes) until close,
// logs the chain's head, and starts the metrics once it runs.
func (p *process) runCore(ctx context.Context) error {
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	p.runDone = make(chan error, 1)
	go func() {
		p.runDone <- safego.Call("controller.run", p.log, func() error { return p.ctl.Run(runCtx) })
	}()
	p.stops = append(p.stops, func(context.Context) error { stopRun(); return <-p.runDone })
	if every := cmp.Or(p.cfg.ChainLogEvery, DefaultChainLogEvery); every > 0 {
		chainCtx, stopChain := context.WithCancel(context.WithoutCancel(ctx))
		chainDone := logChainHead(chainCtx, p.store, every, p.log)
		p.stops = append(p.stops, func(context.Context) error { stopChain(); <-chainDone; return nil })
	}
	if err := waitRunning(ctx, p.ctl, p.runDone); err != nil {
		return err
	}
	p.stops = append(p.stops, p.cm.start(ctx, p.ctl, p.store, p.log))
	return nil
}

// openDoor consumes reports, recorded with a context that outlives ctx
// until the consumer has finished the one in hand. Under a leader lock,
// only once it is held (leadOnLock). A leader records the bootstrap token.
func (p *process) openDoor(ctx context.Context) error {
	p.leadLost = make(chan error, 1)
	p.leadsNow = p.lock == nil
	door := reportDoor{ctl: p.ctl, recorded: p.cfg.Recorded, metrics: p.cm.m, limit: p.cfg.ReportLimit, log: p.log}
	if p.lock == nil {
		stopConsumer, err := consumeReports(ctx, p.bc, door)
		if err != nil {
			return err
		}
		p.stops = append(p.stops, stopConsumer)
	} else if err := p.leadOnLock(ctx, door); err != nil {
		return err
	}
	// The bootstrap token: DATA/api-token's hash is recorded as the token
	// of operator admin, by controller, unless admin has one already (a
	// standby leaves it to the leader, which records it at its start).
	if p.leadsNow {
		return recordBootstrapToken(ctx, p.ctl, p.token, p.log)
	}
	return nil
}

// leadOnLock takes a lock that is free before the controller says it
// serves, so that a lone controller leads from its first request; one
// held elsewhere is waited for in the background.
func (p *process) leadOnLock(ctx context.Context, door reportDoor) error {
	held, _, err := p.lock.TryLeader(ctx) // nil unless taken
	if err != nil {
		return fmt.Errorf("controller: leader lock: %w", err)
	}
	p.leadsNow = held != nil
	leadCtx, stopLead := context.WithCancel(context.WithoutCancel(ctx))
	leadDone := make(chan struct{})
	leading := make(chan struct{})
	go func() {
		defer close(leadDone)
		lerr := safego.Call("controller.lead", p.log, func() error {
			return leadOnLock(leadCtx, p.lock, held, leading, p.bc, door)
		})
		if lerr != nil {
			p.leadLost <- lerr
		}
	}()
	p.stops = append(p.stops, func(context.Context) error { stopLead(); <-leadDone; return nil })
	if held == nil {
		return nil
	}
	select {
	case <-leading:
		return nil
	case <-leadDone:
		select {
		case lerr := <-p.leadLost:
			return fmt.Errorf("controller: %w", lerr)
		default:
			return fmt.Errorf("controller: stopped before leading: %w", context.Cause(ctx))
		}
	}
}

// serveAPI serves the API under /v1 and the page (package web) at /: one
// origin, one token. The page's event streams end with the serving
// context, so that stopping does not wait for them.
func (p *process) serveAPI(ctx context.Context) error {
	ln, err := net.Listen("tcp", p.listen)
	if err != nil {
		return fmt.Errorf("controller: listen %s: %w", p.listen, err)
	}
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	p.served = make(chan error, 1)
	ctl, log := p.ctl, p.log
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.Handler(ctl, p.token, httpapi.WithLogger(log), httpapi.WithAuthenticator(ctl.Authenticate)))
	// Joining: authorised by the join token, outside the API token.
	joinHandler := httpapi.JoinHandler(ctl, p.caPEM, httpapi.WithLogger(log))
	mux.Handle("/v1/join", joinHandler)
	mux.Handle("/v1/join/ca", joinHandler)
	mux.Handle("/", web.Handler(ctl, p.token, web.Options{Feed: ctl, Authenticate: ctl.Authenticate, Logger: log, Done: serveCtx.Done()}))
	go func() {
		p.served <- safego.Call("api.serve", log, func() error {
			return httpapi.Serve(serveCtx, ln, p.cm.handler(mux, httpapi.NewGate(p.token, ctl.Authenticate)),
				httpapi.ServeOptions{TLSCert: p.cfg.TLSCert, TLSKey: p.cfg.TLSKey, Insecure: p.cfg.Insecure, Logger: log})
		})
	}()
	p.stops = append(p.stops, func(context.Context) error { stopServe(); return <-p.served })
	return p.ready(ctx, ln.Addr().String())
}

// ready mints node credentials from where the API and the bus are, gives
// an external cluster history's revocations again, writes
// controller.json and tells cfg.Ready.
func (p *process) ready(ctx context.Context, addr string) error {
	scheme := "http"
	if p.withTLS {
		scheme = "https"
	}
	ready := Ready{APIURL: localURL(scheme, addr), Listen: addr, BusURLs: p.busURLs, AgentBusURLs: p.busURLs, Token: p.token}
	if !p.sb.external && unspecifiedHost(p.sb.listen) {
		ready.AgentBusURLs = withAddresses(p.busURLs, interfaceIPs())
	}
	m, err := newMinter(p.sb, p.busURLs, advertisedAPI(p.cfg, scheme+"://"+addr), p.caPEM)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if m != nil {
		p.ctl.SetMinter(m)
	}
	if p.sb.external && p.sb.revoker != nil && len(p.revoked) > 0 {
		// A revocation recorded while the cluster did not take it: given
		// again at each start (the embedded bus starts with the list).
		if err := p.sb.revoker.Revoke(ctx, p.revoked); err != nil {
			p.log.Warn("controller: the external cluster did not take history's revocation list; mesh node revoke gives it again", "keys", len(p.revoked), "err", err)
		}
	}
	removeInfo, err := controller.WriteInfo(p.cfg.Data, controller.Info{Listen: addr, URL: ready.APIURL})
	if err != nil {
		return err
	}
	p.stops = append(p.stops, func(context.Context) error { return removeInfo() })
	p.log.Info("controller: serving", "api", ready.APIURL, "bus", p.busURLs, "data", p.cfg.Data)
	if p.cfg.Ready != nil {
		p.cfg.Ready(ready)
	}
	return nil
}

// wait runs until ctx ends (a clean stop) or a part stops on its own.
func (p *process) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		p.log.Info("controller: stopping", "cause", context.Cause(ctx))
		return nil
	case rerr := <-p.runDone:
		p.runDone <- rerr // for its stop
		return fmt.Errorf("controller: stopped running: %w", rerr)
	case serr := <-p.served:
		p.served <- serr
		return fmt.Errorf("controller: the API stopped: %w", serr)
	case lerr := <-p.leadLost:
		// A leader whose lock is lost stops at once: another controller
		// may be leading already. Its supervisor starts it again, as a
		// standby.
		return fmt.Errorf("controller: %w", lerr)
	case werr := <-p.walked:
		// The bolt file's structure, walked after the start: damage
		// stops the controller, which could write nothing more.
		return fmt.Errorf("controller: the event store: %w", werr)
	}
}

// openControllerStore opens the event store cfg names for writing: the
// bolt file in the data directory (locked while open), or the store at
// cfg.Store's URL (a PostgreSQL database is migrated to this build's
// schema first). lock is the leader election the controller takes part
// in: cfg.Leadership if set, else the store's when several controllers
// may share it (PostgreSQL), else nil: the controller leads at once.
func openControllerStore(ctx context.Context, cfg Config, log *slog.Logger) (events.Store, Leadership, error) {
	s, err := storeurl.Open(ctx, cfg.Store, storeurl.Options{Data: cfg.Data, Create: true, Logger: log, WalkInBackground: true})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, nil, fmt.Errorf("controller: %w: %w", ErrStoreHeld, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("controller: %w", err)
	}
	if cfg.Leadership != nil {
		return s, cfg.Leadership, nil
	}
	if ps, ok := s.(*pgstore.Store); ok {
		return s, pgLeadership{ps}, nil
	}
	return s, nil, nil
}

// watchWalk waits, on a goroutine, for the walk of a bolt file opened with
// storeurl.Options.WalkInBackground; the channel it returns gets the
// damage that walk found (and nothing otherwise).
func watchWalk(ctx context.Context, store events.Store, log *slog.Logger) <-chan error {
	out := make(chan error, 1)
	bs, ok := store.(*boltstore.Store)
	if !ok {
		return out
	}
	go func() {
		start := time.Now()
		err := bs.Walked(ctx)
		switch {
		case err == nil:
			log.Info("store: the bolt file's structure is whole", "took", time.Since(start).Round(time.Millisecond))
		case errors.Is(err, events.ErrDamaged):
			out <- err
		}
	}()
	return out
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

// recordBootstrapToken records the DATA/api-token's SHA-256 as the API
// token of operator controller.BootstrapTokenName (token.created, by
// "controller") unless that name has a token already. Requests made with
// the bootstrap token itself keep the operator they declare (the handler
// compares it to the file, as before); the record makes the token known
// to every controller of the store, and revocable.
func recordBootstrapToken(ctx context.Context, ctl *controller.Controller, token string, log *slog.Logger) error {
	made, err := ctl.RecordToken(ctx, controller.BootstrapTokenName, token, "controller")
	if err != nil {
		return fmt.Errorf("controller: bootstrap token: %w", err)
	}
	if made {
		log.Info("controller: recorded the bootstrap API token", "operator", controller.BootstrapTokenName)
	}
	return nil
}
