package agentd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/agent/simruntime"
	"meshplane/bus"
	"meshplane/internal/buildinfo"
)

// Runtimes an agent runs on (Config.Runtime, `mesh agent --runtime`), as a
// mesh file's nodes name them (runtime:).
const (
	// RuntimeSim is the simulated runtime, kept in a file: given only by
	// name (--runtime sim), never a default on a real host.
	RuntimeSim = "sim"
	// RuntimeDocker is the Docker engine (package agent/docker), the
	// default when an engine answers (DefaultRuntime).
	RuntimeDocker = "docker"
)

// DefaultRuntime is the runtime of an agent started with none named: Docker
// when an engine answers where the environment names one (within 5 s),
// else an error wrapping docker.ErrNoEngine that names --runtime sim. The
// simulated runtime runs nothing, so an agent on it reports green for
// anything: it is never a silent default.
func DefaultRuntime(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := docker.Reachable(ctx); err != nil {
		return "", fmt.Errorf("agent: no --runtime given, and %w; give --runtime docker once an engine answers, or --runtime sim for a simulated node (it runs nothing)", err)
	}
	return RuntimeDocker, nil
}

// Config is what an agent runs with; `mesh agent` fills one field per flag.
type Config struct {
	// Creds is the node's credentials file (--creds), written by `mesh node
	// register NAME --creds FILE`: the node's name, the bus's URLs and a
	// user that may read only that node's declaration and publish only its
	// reports. Required; mode 0600.
	Creds string
	// Data is the agent's data directory (--data): DATA/outbox holds the
	// reports not yet delivered and the agent's State, so a restarted agent
	// delivers them (late, counted) and remembers what it made. Required;
	// made if missing. One agent per directory: DATA/agent.lock is held
	// while it runs.
	Data string
	// Runtime (--runtime) is "sim" (the default: simulated containers and
	// disk, kept in DATA/SimStateFile: a restarted agent finds the node as
	// it left it) or "docker" (agent/docker: the engine at DOCKER_HOST,
	// else the default socket, with API version negotiation).
	Runtime string
	// SimFound, for runtime "sim", are directories already on the
	// simulated node when it starts (a mesh file's found:, --sim-found);
	// one the node holds already (a restart) is left as it is.
	SimFound []string
	// DockerRoot, for runtime "docker", is the host directory under which
	// every absolute path of the declaration lives (--docker-root);
	// empty: the paths themselves.
	DockerRoot string
	// DockerPrefix, for runtime "docker", is put before the engine's name
	// of every container, network and volume (--docker-prefix), so that
	// several nodes can share one engine (`mesh up` runs its local nodes
	// so); the labels keep the declared names.
	DockerPrefix string
	// DockerLabels, for runtime "docker", are put on every container,
	// network and volume it makes (--docker-label; docker.Options.Labels):
	// `mesh up` gives its data directory's id (agent.LabelData).
	DockerLabels map[string]string
	// ArtifactStore, when set, is the address ("127.0.0.1:7481") on which
	// the agent serves the artifact store (--artifact-store): the agent of
	// the node that holds it (`node set NODE artifact-store PORT`), its
	// files in DATA/artifacts. An address it cannot listen on is an error
	// at start.
	ArtifactStore string
	// Interval (--interval) is the drift check: the latest declaration is
	// applied again this long after the last apply; agent.DefaultInterval
	// (1m) when zero.
	Interval time.Duration

	// RetryMax bounds the wait between rounds of sending kept reports again
	// (agent.DefaultRetryMax when zero); ReportTimeout one delivery attempt
	// (agent.DefaultReportTimeout). Tests shorten them.
	RetryMax      time.Duration
	ReportTimeout time.Duration
	// ClockOffset runs the agent's clock (what its reports are stamped with)
	// this far off the machine's: a host whose clock is wrong, in tests
	// ($MESH_AGENT_CLOCK_OFFSET of mesh agent). Zero is the machine's clock.
	ClockOffset time.Duration
	// Logger gets the agent's log; nil means text on stderr.
	Logger *slog.Logger
	// Sim, for runtime "sim", is the simulated node to use (tests inspect
	// it), in memory; nil opens the one kept in DATA/SimStateFile.
	Sim *simruntime.Runtime
	// Applied, if set, is called after each apply with its report.
	Applied func(agent.Report)
	// Outbox, if set, is used instead of DATA/outbox (a benchmark keeps it
	// in memory, as if each agent had a disk of its own).
	Outbox *agent.Outbox
	// HeartbeatEvery is how often the agent says on the bus that it is
	// alive (mesh.heartbeat.<node>, never stored): bus.DefaultHeartbeatEvery
	// (5s) when zero. The controller says a node is unreachable after
	// --silent-after (30s) without one.
	HeartbeatEvery time.Duration
	// Metrics (--metrics) is a host:port where the agent serves its
	// Prometheus metrics at /metrics (package metrics): outbox depth,
	// applies, bus errors. Empty: none.
	Metrics string
}

// Run runs a node's agent in the foreground until ctx ends (the caller
// turns SIGINT and SIGTERM into that): it connects to the bus with the
// node's credentials (waiting while no bus answers: an agent may start
// before its controller), watches its declaration, applies it when it
// changes and every Interval, and delivers its reports through the outbox
// (agent.Run), heartbeating on the bus meanwhile (HeartbeatEvery). It
// returns nil when ctx ends, and an error if it cannot start (credentials
// refused or unreadable, an unknown runtime, an outbox that
// does not load, its data directory held: ErrDataHeld) or the bus
// connection is closed under it.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Creds == "" || cfg.Data == "" {
		return errors.New("agent: --creds and --data are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	creds, err := bus.LoadCreds(cfg.Creds)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	log = log.With("node", creds.Node)
	unlock, err := lockData(cfg.Data)
	if err != nil {
		return err
	}
	defer unlock()
	// After the lock: a simulated node's state file is the directory's.
	rt, err := newRuntime(cfg, creds.Node, log)
	if err != nil {
		return err
	}
	if cfg.ArtifactStore != "" {
		stopStore, err := serveArtifactStore(ctx, cfg.ArtifactStore, filepath.Join(cfg.Data, ArtifactsDir), log)
		if err != nil {
			return err
		}
		defer stopStore()
	}
	box := cfg.Outbox
	if box == nil {
		if box, err = agent.OpenOutbox(filepath.Join(cfg.Data, OutboxDir), agent.OutboxLogger(log)); err != nil {
			return err
		}
	}
	n, err := bus.DialNode(ctx, creds, bus.NodeOptions{Logger: log, WaitForBus: true})
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting for the bus
		}
		return fmt.Errorf("agent: %w", err)
	}
	defer n.Close()
	hbCtx, stopHeartbeats := context.WithCancel(ctx)
	heartbeats := make(chan struct{})
	go func() {
		defer close(heartbeats)
		n.Heartbeats(hbCtx, cfg.HeartbeatEvery, buildinfo.Version(), clock(cfg.ClockOffset))
	}()
	defer func() { stopHeartbeats(); <-heartbeats }()
	link := n.Agent()
	var reporter agent.Reporter = link
	applied := cfg.Applied
	if cfg.Metrics != "" {
		m, stop, err := serveMetrics(cfg.Metrics, creds.Node, box, log)
		if err != nil {
			return err
		}
		defer stop()
		reporter, applied = m.Reporter(link), m.Applied(applied)
	}
	log.Info("agent: running", "bus", creds.URLs, "data", cfg.Data, "interval", cfg.Interval)
	err = agent.Run(ctx, agent.RunConfig{
		Node: creds.Node, Runtime: rt, Outbox: box, Source: link, Rosters: link, Reporter: reporter, DryRuns: link, Secrets: link,
		Interval: cfg.Interval, RetryMax: cfg.RetryMax, ReportTimeout: cfg.ReportTimeout,
		Logger: log, Applied: applied, Now: clock(cfg.ClockOffset),
		FollowContainers: true,
	})
	if err == nil {
		log.Info("agent: stopped")
	}
	return err
}

// clock is the agent's clock, offset from the machine's; nil (agent.Run's
// time.Now) when there is no offset.
func clock(offset time.Duration) func() time.Time {
	if offset == 0 {
		return nil
	}
	return func() time.Time { return time.Now().Add(offset) }
}

// SimStateFile is where, in an agent's data directory, a simulated node
// (runtime sim) keeps its containers, directories and files
// (simruntime.Open; format there), so that a restarted agent finds what
// it had and its next apply recreates nothing.
const SimStateFile = "sim-node.json"

// openSim opens the simulated node kept at path. A damaged file is moved
// aside to path.damaged (nothing is deleted) and logged, and the node
// starts empty, as a host whose disk was lost.
func openSim(path string, log *slog.Logger) (*simruntime.Runtime, error) {
	sim, err := simruntime.Open(path)
	if errors.Is(err, simruntime.ErrDamaged) {
		aside := path + ".damaged"
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("agent: %w (and moving it aside failed: %v)", err, rerr)
		}
		log.Warn("agent: runtime sim: passed over a damaged state file; the node starts empty", "moved-to", aside, "error", err)
		sim, err = simruntime.Open(path)
	}
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return sim, nil
}

// newRuntime makes the runtime cfg names for node.
func newRuntime(cfg Config, node string, log *slog.Logger) (agent.Runtime, error) {
	switch cfg.Runtime {
	case RuntimeSim, "":
		sim := cfg.Sim
		where := "in memory"
		if sim == nil {
			var err error
			if sim, err = openSim(filepath.Join(cfg.Data, SimStateFile), log); err != nil {
				return nil, err
			}
			where = filepath.Join(cfg.Data, SimStateFile)
		}
		for _, dir := range cfg.SimFound {
			if _, ok := sim.Dir(dir); ok {
				continue // found at an earlier start, and kept
			}
			if err := sim.MakeDirectory(dir, 0o755); err != nil {
				return nil, fmt.Errorf("agent: found directory %s: %w", dir, err)
			}
		}
		log.Info("agent: runtime sim: the node is simulated", "state", where)
		return sim, nil
	case RuntimeDocker:
		d, err := docker.New(docker.Options{Node: node, Root: cfg.DockerRoot, Prefix: cfg.DockerPrefix, Labels: cfg.DockerLabels})
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		log.Info("agent: runtime docker", "root", cfg.DockerRoot, "prefix", cfg.DockerPrefix, "labels", cfg.DockerLabels)
		return d, nil
	default:
		return nil, fmt.Errorf("agent: --runtime %q: want %s or %s", cfg.Runtime, RuntimeSim, RuntimeDocker)
	}
}
