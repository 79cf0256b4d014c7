package main

// The agent process (`mesh agent`), assembled from the packages without any
// CLI framework: the verb parses flags into agentConfig and calls runAgent.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/agent/simruntime"
	"meshplane/artifacts"
	"meshplane/bus"
	"meshplane/internal/safego/safehttp"
	"meshplane/meshup"
)

// Runtimes `mesh agent --runtime` names, as a mesh file's nodes do.
const (
	runtimeSim    = meshup.RuntimeSim
	runtimeDocker = meshup.RuntimeDocker
)

// outboxDir is where, in an agent's data directory, its reports wait for
// the controller and its State is kept (agent.OpenOutbox; format there).
const outboxDir = "outbox"

// artifactsDir is where, in an agent's data directory, the artifact store
// it serves keeps its blobs and manifests (--artifact-store; format in
// package artifacts), as the supervisor of up's agents says.
const artifactsDir = meshup.ArtifactsDir

// agentLockFile, in an agent's data directory, is held (flock) while an
// agent runs on it: two agents over one outbox would deliver each other's
// reports and overwrite each other's State.
const agentLockFile = "agent.lock"

// errDataHeld is runAgent's error when another agent runs on its data
// directory.
var errDataHeld = errors.New("another agent runs on this data directory")

// lockAgentData makes dir and takes its lock, or fails with errDataHeld.
func lockAgentData(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, agentLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("agent: %s: %w", dir, errDataHeld)
		}
		return nil, fmt.Errorf("agent: lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// agentConfig is what `mesh agent` runs with, one field per flag.
type agentConfig struct {
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
	// disk, in memory: a restarted agent starts from an empty node and
	// recreates everything) or "docker" (agent/docker: the engine at
	// DOCKER_HOST, else the default socket, with API version negotiation).
	Runtime string
	// SimFound, for runtime "sim", are directories already on the
	// simulated node when it starts (a mesh file's found:, --sim-found).
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
	// Logger gets the agent's log; nil means text on stderr.
	Logger *slog.Logger
	// Sim, for runtime "sim", is the simulated node to use (tests inspect
	// it); nil makes an empty one.
	Sim *simruntime.Runtime
	// Applied, if set, is called after each apply with its report.
	Applied func(agent.Report)
	// Outbox, if set, is used instead of DATA/outbox (a benchmark keeps it
	// in memory, as if each agent had a disk of its own).
	Outbox *agent.Outbox
	// Metrics (--metrics) is a host:port where the agent serves its
	// Prometheus metrics at /metrics (package metrics): outbox depth,
	// applies, bus errors. Empty: none.
	Metrics string
}

// runAgent runs a node's agent in the foreground until ctx ends (the caller
// turns SIGINT and SIGTERM into that): it connects to the bus with the
// node's credentials (waiting while no bus answers: an agent may start
// before its controller), watches its declaration, applies it when it
// changes and every Interval, and delivers its reports through the outbox
// (agent.Run). It returns nil when ctx ends, and an error if it cannot start
// (credentials refused or unreadable, an unknown runtime, an outbox that
// does not load) or the bus connection is closed under it.
func runAgent(ctx context.Context, cfg agentConfig) error {
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
	var rt agent.Runtime
	switch cfg.Runtime {
	case runtimeSim, "":
		sim := cfg.Sim
		if sim == nil {
			sim = simruntime.New()
		}
		for _, dir := range cfg.SimFound {
			if err := sim.MakeDirectory(dir, 0o755); err != nil {
				return fmt.Errorf("agent: found directory %s: %w", dir, err)
			}
		}
		log.Info("agent: runtime sim: the node is simulated in memory; a restarted agent starts from an empty node")
		rt = sim
	case runtimeDocker:
		d, err := docker.New(docker.Options{Node: creds.Node, Root: cfg.DockerRoot, Prefix: cfg.DockerPrefix, Labels: cfg.DockerLabels})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		log.Info("agent: runtime docker", "root", cfg.DockerRoot, "prefix", cfg.DockerPrefix, "labels", cfg.DockerLabels)
		rt = d
	default:
		return fmt.Errorf("agent: --runtime %q: want %s or %s", cfg.Runtime, runtimeSim, runtimeDocker)
	}
	unlock, err := lockAgentData(cfg.Data)
	if err != nil {
		return err
	}
	defer unlock()
	if cfg.ArtifactStore != "" {
		stopStore, err := serveArtifactStore(ctx, cfg.ArtifactStore, filepath.Join(cfg.Data, artifactsDir), log)
		if err != nil {
			return err
		}
		defer stopStore()
	}
	box := cfg.Outbox
	if box == nil {
		if box, err = agent.OpenOutbox(filepath.Join(cfg.Data, outboxDir), agent.OutboxLogger(log)); err != nil {
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
	link := n.Agent()
	var reporter agent.Reporter = link
	applied := cfg.Applied
	if cfg.Metrics != "" {
		m, stop, err := serveAgentMetrics(cfg.Metrics, creds.Node, box, log)
		if err != nil {
			return err
		}
		defer stop()
		reporter, applied = m.Reporter(link), m.Applied(applied)
	}
	log.Info("agent: running", "bus", creds.URLs, "data", cfg.Data, "interval", cfg.Interval)
	err = agent.Run(ctx, agent.RunConfig{
		Node: creds.Node, Runtime: rt, Outbox: box, Source: link, Reporter: reporter, DryRuns: link,
		Interval: cfg.Interval, RetryMax: cfg.RetryMax, ReportTimeout: cfg.ReportTimeout,
		Logger: log, Applied: applied,
	})
	if err == nil {
		log.Info("agent: stopped")
	}
	return err
}

// serveArtifactStore serves the artifact store in dir on addr until ctx is
// done or stop is called (which waits for the server to stop). It listens
// before it returns: an address taken is an error now, not in the log.
func serveArtifactStore(ctx context.Context, addr, dir string, log *slog.Logger) (stop func(), err error) {
	h, err := artifacts.NewHandler(dir)
	if err != nil {
		return nil, fmt.Errorf("agent: artifact store: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agent: artifact store: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	h = safehttp.Handler("agent.artifacts", log, h, nil)
	go func() {
		defer close(done)
		if err := artifacts.ServeOn(sctx, ln, h); err != nil {
			log.Error("agent: artifact store stopped", "err", err)
		}
	}()
	log.Info("agent: serving the artifact store", "addr", ln.Addr().String(), "dir", dir)
	return func() { cancel(); <-done }, nil
}
