package main

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"meshplane/agent/agentd"
	"meshplane/host/join"
	"meshplane/internal/flagcheck"
)

// agentOptions are mesh agent's flags (agentd.Config's fields, flags()
// says which is which).
type agentOptions struct {
	creds, data, runtime     string
	interval, heartbeat      time.Duration
	simFound                 []string // --sim-found: what up passes for a mesh file's found:
	dockerRoot, dockerPrefix string
	artifactStore, metrics   string
	dockerLabels             []string // --docker-label KEY=VALUE, repeatable
}

func (e *env) agentCmd() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent [--creds FILE] --data DIR [--runtime docker|sim] [--interval 1m]",
		Short: "run one node's agent: apply the latest declaration from the bus, report each apply",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
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
	fs.StringVar(&o.runtime, "runtime", "", "the container runtime: docker, or sim (simulated, kept in DATA/sim-node.json; it runs nothing); unset: docker when an engine answers, else the agent refuses to start")
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
	if o.runtime == "" {
		rt, err := agentd.DefaultRuntime(cmd.Context())
		if err != nil {
			return err
		}
		o.runtime = rt
	}
	labels, err := agentd.Labels(o.dockerLabels)
	offset, err2 := agentd.ClockOffset(os.Getenv(agentd.ClockOffsetEnv))
	cfg := agentd.Config{
		ClockOffset: offset,
		Creds:       o.creds, Data: o.data, Runtime: o.runtime, Interval: o.interval, HeartbeatEvery: o.heartbeat,
		SimFound: o.simFound, DockerRoot: o.dockerRoot, DockerPrefix: o.dockerPrefix, DockerLabels: labels,
		ArtifactStore: o.artifactStore, Metrics: o.metrics,
	}
	if err := errors.Join(err, err2, cfg.Check()); err != nil {
		return err // bad usage (usage.Err)
	}
	return agentd.Run(cmd.Context(), cfg)
}
