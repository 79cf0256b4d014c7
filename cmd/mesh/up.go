package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/daemon"
	"meshplane/internal/flagcheck"
	"meshplane/meshup"
	"meshplane/session"
)

// upOptions are mesh up's flags. Without --passes, up is the controller
// (env.up, meshup.Up); --passes N is the in-process run (env.upPasses,
// meshup.Passes: define, set up, run N passes over simulated nodes in this
// process, exit), kept for scripts and golden tests that need no processes.
type upOptions struct {
	data       string
	store      string // --store: "" or "bolt" for the file in data, else a URL
	modulesDir string
	meshPath   string
	passes     int

	listen, busListen, nats string
	tlsCert, tlsKey, tlsCA  string
	advertise               string
	insecure, once          bool
	pushOnDefine            bool
	interval                time.Duration
	bus                     busOptions // up_bus.go
}

// controllerFlags are the controller's flags, refused with --passes.
var controllerFlags = []string{"listen", "bus-listen", "nats", "advertise", "tls-cert", "tls-key", "insecure", "interval", "once", "push-on-define"}

func (e *env) upCmd() *cobra.Command {
	var o upOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "run the controller (store, bus, API) in the foreground; with --mesh/--modules also set up the mesh and start its agents",
		Long: `Run the controller in the foreground until SIGINT or SIGTERM (then a clean
stop): the event store in --data, the embedded bus (NATS) on --bus-listen, the
projections kept live, and the HTTP API on --listen, its token in
DATA/api-token.

With --mesh FILE or --modules DIR it first builds the images the mesh file's
builds: name (Go programs of the project, static, one layer), defines the
modules and sets up the nodes they name, the builds recorded (each command
checked first: one refused writes none; work already done appends nothing),
then starts one agent process per node of the mesh file (DATA/agents/NODE:
credentials, outbox, agent.log), stopped with the controller. A node that
says runtime: docker runs on the Docker engine (DOCKER_HOST, else the default
socket) when one answers: its paths under DATA/agents/NODE/root, its engine
names prefixed NODE-, everything it makes there (and every image up builds)
labelled meshplane.data=ID, the data directory's id in DATA/data-id, so that
the clean-up up prints touches only this data directory's on a shared
engine, and, if it holds the artifact store, its agent serves
it and up pushes the builds there first. With no engine up says so and
simulates it; every other node is simulated.

--once (with the example mesh unless --mesh/--modules say otherwise) does the
set-up, pushes every node, waits until each node's report is recorded, prints
their status, stops the agents and the controller, and exits: 0 when every
node reported.

--passes N instead runs the mesh in this process (every node simulated, no
bus, no API): N passes of push and apply, then exit.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			o.data, o.tlsCA, o.store = t.data, t.tlsCA, t.store
			if !cmd.Flags().Changed("passes") {
				return e.up(cmd, o, t.bolt())
			}
			if !t.bolt() {
				return usagef("--passes runs the mesh in this process on the bolt store in --data; --store is the controller's")
			}
			for _, f := range controllerFlags {
				if cmd.Flags().Changed(f) {
					return usagef("--passes runs the mesh in this process; --%s is the controller's", f)
				}
			}
			return e.upPasses(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.modulesDir, "modules", "examples/local/modules", "the `directory` of module files (*.yaml) to define")
	fs.StringVar(&o.meshPath, "mesh", "examples/local/mesh.yaml", "the `file` describing the nodes")
	fs.IntVar(&o.passes, "passes", 2, "passes (push, then apply) to run on each node")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7480", "controller: serve the HTTP API on this `address`")
	fs.StringVar(&o.busListen, "bus-listen", "127.0.0.1:4222", "controller: the embedded NATS server listens on this `address`")
	fs.StringVar(&o.nats, "nats", "", "controller: use the NATS cluster at this `URL` instead of the embedded server")
	fs.StringVar(&o.advertise, "advertise", "", "controller: the API `URL` hosts reach it at, named in join tokens (default: the URL it serves at, an unspecified host replaced by this machine's name)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "controller: serve the API and the bus with this PEM certificate `file`")
	fs.StringVar(&o.tlsKey, "tls-key", "", "controller: the certificate's PEM key `file`")
	fs.BoolVar(&o.insecure, "insecure", false, "controller: serve beyond loopback without TLS")
	fs.DurationVar(&o.interval, "interval", 5*time.Minute, "controller: compose every node and push what changed every `duration`")
	fs.BoolVar(&o.once, "once", false, "controller: set up, run one pass, and exit")
	fs.BoolVar(&o.pushOnDefine, "push-on-define", true, "controller: a module definition pushes the nodes it changes at once (the default); false: it waits for mesh push, and the interval pass pushes nothing until then")
	addBusFlags(fs, &o.bus)
	flagcheck.Install(fs, map[string]flagcheck.Check{
		"passes": flagcheck.AtLeast(1), "interval": flagcheck.Positive,
		"listen": flagcheck.Optional(flagcheck.ListenAddr), "advertise": flagcheck.Optional(flagcheck.URLOf("https", "http")), "bus-listen": flagcheck.Optional(flagcheck.ListenAddr),
		"nats": flagcheck.Optional(flagcheck.ListOf(flagcheck.URLOf("nats", "tls", "ws", "wss"))),
	})
	return cmd
}

// upPasses is mesh up --passes N, the in-process run (meshup.Passes).
func (e *env) upPasses(ctx context.Context, o upOptions) error {
	mf, defs, err := readSetUp(o)
	if err != nil {
		return err
	}
	sts, err := meshup.Passes(ctx, meshup.PassesConfig{
		Data: o.data, File: mf, Modules: defs, Passes: o.passes,
		Check: e.checkFresh(o.data), Clock: e.now, Out: e.stdout,
	})
	if err != nil {
		return err
	}
	e.sayPasses(o, sts)
	return nil
}

// readSetUp reads the mesh file and the module files up sets up.
func readSetUp(o upOptions) (meshup.File, []commands.DefineModule, error) {
	mf, err := meshup.ReadFile(o.meshPath)
	if err != nil {
		return mf, nil, err
	}
	files, err := filepath.Glob(filepath.Join(o.modulesDir, "*.yaml"))
	if err != nil {
		return mf, nil, err
	}
	defs, err := readModuleFiles(files)
	return mf, defs, err
}

// checkFresh is the set-up's check on a bolt store in data not made yet.
func (e *env) checkFresh(data string) func(context.Context, []commands.Command) error {
	return func(ctx context.Context, cs []commands.Command) error { return session.CheckFresh(ctx, data, cs) }
}

// up runs mesh up as the controller (meshup.Up), in the foreground until
// SIGINT or SIGTERM; with --once for one pass, then it prints each node's
// status and where to look: exit 0 when every node reported, 1 otherwise.
func (e *env) up(cmd *cobra.Command, o upOptions, bolt bool) error {
	fs := cmd.Flags()
	cfg := meshup.UpConfig{
		Controller: daemon.Config{
			Data: o.data, Listen: o.listen, BusListen: o.busListen,
			TLSCert: o.tlsCert, TLSKey: o.tlsKey, Insecure: o.insecure,
			Interval: o.interval, Store: o.store, AdvertiseURL: o.advertise,
			HoldDefines: !o.pushOnDefine,
		},
		SetUp: o.once || fs.Changed("mesh") || fs.Changed("modules"), MeshPath: o.meshPath,
		Clock: e.now, Actor: operator(), Once: o.once, TLSCA: o.tlsCA, Out: e.stdout, Log: e.stderr,
		Ready: func(r daemon.Ready) error { return e.upReady(o, r) },
	}
	if o.nats != "" {
		cfg.Controller.NATS = []string{o.nats}
	}
	if err := o.bus.apply(&cfg.Controller, o.tlsCA); err != nil {
		return err
	}
	if bolt {
		cfg.Check = e.checkFresh(o.data)
	}
	var err error
	if cfg.SetUp {
		if cfg.File, cfg.Modules, err = readSetUp(o); err != nil {
			return err
		}
	}
	res, err := meshup.Up(cmd.Context(), cfg)
	if !res.Converged {
		return err
	}
	return errors.Join(e.sayOnce(o, cfg.File, res), err)
}
