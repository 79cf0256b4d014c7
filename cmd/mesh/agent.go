package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"meshplane/agent/agentd"
	"meshplane/host/join"
	"meshplane/internal/flagcheck"
)

// outboxDir is where, in an agent's data directory, its reports wait
// (agentd.OutboxDir; the format is agent.OpenOutbox's): the verbs that read
// an agent's directory (store verify) find it there.
const outboxDir = agentd.OutboxDir

// agentOptions are mesh agent's flags.
type agentOptions struct {
	creds     string
	data      string
	runtime   string
	interval  time.Duration
	heartbeat time.Duration
	// simFound are directories already on a simulated node (--sim-found):
	// what `mesh up` passes for a mesh file's found: of an adopted node.
	simFound []string
	// dockerRoot is --docker-root: the host directory under which the
	// Docker runtime keeps every absolute path of the declaration.
	dockerRoot string
	// dockerPrefix is --docker-prefix: put before every engine name.
	dockerPrefix string
	// artifactStore is --artifact-store: serve the artifact store here.
	artifactStore string
	// metrics is --metrics: where to serve /metrics.
	metrics string
	// dockerLabels is --docker-label KEY=VALUE, repeatable.
	dockerLabels []string
}

func (e *env) agentCmd() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent [--creds FILE] --data DIR [--runtime sim|docker] [--interval 1m]",
		Short: "run one node's agent: apply the latest declaration from the bus, report each apply",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			o.data, _ = cmd.Flags().GetString(flagData)
			if o.creds == "" {
				joined := filepath.Join(o.data, join.CredsFile)
				if _, err := os.Stat(joined); err != nil {
					return usagef("give --creds FILE (from 'mesh node register NODE --creds FILE'), or join first: 'mesh agent join URL --token T --data %s' writes %s", o.data, joined)
				}
				o.creds = joined
			}
			return runAgentCmd(cmd, o)
		},
	}
	o.flags(cmd.Flags())
	cmd.AddCommand(e.agentJoinCmd(), e.agentInstallCmd(), e.agentUninstallCmd())
	return cmd
}

// flags declares mesh agent's flags on fs (mesh agent join takes them too,
// for the agent it starts).
func (o *agentOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.creds, "creds", "", "the node's bus credential `file` (default: DATA/node.creds, written by mesh agent join)")
	fs.StringVar(&o.runtime, "runtime", "sim", "the container runtime: sim or docker")
	fs.DurationVar(&o.interval, "interval", time.Minute, "apply the latest declaration again every `duration` (drift)")
	fs.DurationVar(&o.heartbeat, "heartbeat", 5*time.Second, "say on the bus that the agent is alive every `duration` (keep it well under the controller's --silent-after)")
	fs.StringSliceVar(&o.simFound, "sim-found", nil, "runtime sim: `directories` already on the simulated node when it starts (as a mesh file's found:)")
	fs.StringVar(&o.dockerRoot, "docker-root", "", "runtime docker: the host directory `DIR` every path of the declaration is kept under (/etc/x is DIR/etc/x; default /): nothing outside it is ever made, changed, read or removed, and no symbolic link in it is followed (a link where a declared file or directory is fails that resource, and is left for the operator)")
	fs.StringVar(&o.dockerPrefix, "docker-prefix", "", "runtime docker: put this `prefix` before the engine's name of every container, network and volume (several nodes on one engine)")
	fs.StringVar(&o.artifactStore, "artifact-store", "", "serve the artifact store on this `address` (host:port; the node holds it), its files in DATA/artifacts")
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics (outbox depth, applies, bus errors) at http://`ADDR`/metrics, no token: a private or loopback host:port")
	_ = fs.MarkHidden("sim-found") // for the simulated nodes `mesh up` starts
	fs.StringArrayVar(&o.dockerLabels, "docker-label", nil, "runtime docker: put this label (`KEY=VALUE`) on every container, network and volume, and leave alone any container with KEY at another value (another mesh's, on a shared engine); repeatable")
	flagcheck.Install(fs, map[string]flagcheck.Check{"interval": flagcheck.Positive, "heartbeat": flagcheck.Positive, "artifact-store": flagcheck.Optional(flagcheck.DialAddr), "metrics": flagcheck.Optional(flagcheck.ListenAddr), "docker-label": label})
}

// runAgentCmd runs mesh agent in the foreground until SIGINT or SIGTERM
// (agentd.Run, the agent process assembled).
func runAgentCmd(cmd *cobra.Command, o agentOptions) error {
	if o.runtime != agentd.RuntimeSim && o.runtime != agentd.RuntimeDocker {
		return usagef("--runtime %q: want sim or docker", o.runtime)
	}
	if len(o.simFound) > 0 && o.runtime != agentd.RuntimeSim {
		return usagef("--sim-found is for --runtime sim")
	}
	if o.dockerRoot != "" && o.runtime != agentd.RuntimeDocker {
		return usagef("--docker-root is for --runtime docker")
	}
	if o.dockerPrefix != "" && o.runtime != agentd.RuntimeDocker {
		return usagef("--docker-prefix is for --runtime docker")
	}
	if len(o.dockerLabels) > 0 && o.runtime != agentd.RuntimeDocker {
		return usagef("--docker-label is for --runtime docker")
	}
	labels := map[string]string{}
	for _, l := range o.dockerLabels {
		k, v, _ := strings.Cut(l, "=")
		if old, ok := labels[k]; ok && old != v {
			return usagef("--docker-label %s given twice (%q, %q)", k, old, v)
		}
		labels[k] = v
	}
	// A host whose clock is off, made in tests (the controller refuses
	// its reports beyond events.MaxReportSkew, saying by how much).
	var offset time.Duration
	if v := os.Getenv("MESH_AGENT_CLOCK_OFFSET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return usagef("MESH_AGENT_CLOCK_OFFSET=%q: want a duration (10m, -30s)", v)
		}
		offset = d
	}
	return agentd.Run(cmd.Context(), agentd.Config{
		ClockOffset: offset,
		Creds:       o.creds, Data: o.data, Runtime: o.runtime, Interval: o.interval, HeartbeatEvery: o.heartbeat,
		SimFound: o.simFound, DockerRoot: o.dockerRoot, DockerPrefix: o.dockerPrefix, DockerLabels: labels,
		ArtifactStore: o.artifactStore, Metrics: o.metrics,
	})
}
