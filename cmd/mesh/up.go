package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/controllerd"
	"meshplane/internal/flagcheck"
	"meshplane/meshup"
	"meshplane/session"
)

// upOptions are mesh up's flags. Without --passes, up is the controller
// (env.up, meshup.Up); --passes N is the in-process run (env.upPasses,
// meshup.Passes: define, set up, run N passes over simulated nodes in this
// process, exit), kept for scripts and golden tests that need no processes.
type upOptions struct {
	ctl          controllerd.Config // the controller's flags, bound into its config
	modulesDir   string
	meshPath     string
	passes       int
	nats         string
	once         bool
	pushOnDefine bool
}

// controllerFlags are the controller's flags, refused with --passes.
var controllerFlags = []string{"listen", "bus-listen", "nats", "advertise", "tls-cert", "tls-key", "insecure", "interval", "silent-after", "once", "push-on-define"}

func (e *env) upCmd() *cobra.Command {
	var o upOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "run the controller (store, bus, API) in the foreground; with --mesh/--modules also set up the mesh and start its agents",
		Long:  meshup.UpHelp,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			o.ctl.Data, o.ctl.TLSCA, o.ctl.Store = t.Data, t.TLSCA, t.Store
			o.fillExample()
			if !cmd.Flags().Changed("passes") {
				return e.up(cmd, o, t.Bolt())
			}
			if !t.Bolt() {
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
	fs.StringVar(&o.modulesDir, "modules", "", "the `directory` of module files (*.yaml) to define (--once and --passes without it: "+exampleModules+")")
	fs.StringVar(&o.meshPath, "mesh", "", "the `file` describing the nodes (--once and --passes without it: "+exampleMesh+"; a plain up sets up nothing)")
	fs.IntVar(&o.passes, "passes", 2, "passes (push, then apply) to run on each node")
	fs.StringVar(&o.ctl.Listen, "listen", "127.0.0.1:7480", "controller: serve the HTTP API on this `address`")
	fs.StringVar(&o.ctl.BusListen, "bus-listen", "127.0.0.1:4222", "controller: the embedded NATS server listens on this `address`")
	fs.StringVar(&o.nats, "nats", "", "controller: use the NATS cluster at this `URL` instead of the embedded server")
	fs.StringVar(&o.ctl.AdvertiseURL, "advertise", "", "controller: the API `URL` hosts reach it at, named in join tokens (default: the URL it serves at, an unspecified host replaced by this machine's name)")
	fs.StringVar(&o.ctl.TLSCert, "tls-cert", "", "controller: serve the API and the bus with this PEM certificate `file`")
	fs.StringVar(&o.ctl.TLSKey, "tls-key", "", "controller: the certificate's PEM key `file`")
	fs.BoolVar(&o.ctl.Insecure, "insecure", false, "controller: serve beyond loopback without TLS")
	fs.DurationVar(&o.ctl.Interval, "interval", 5*time.Minute, "controller: compose every node and push what changed every `duration`")
	fs.DurationVar(&o.ctl.SilentAfter, "silent-after", 30*time.Second, "controller: a node with no heartbeat for this `duration` is unreachable (node.went-silent)")
	fs.BoolVar(&o.once, "once", false, "controller: set up, run one pass, and exit")
	fs.BoolVar(&o.pushOnDefine, "push-on-define", true, "controller: a module definition pushes the nodes it changes at once (the default); false: it waits for mesh push, and the interval pass pushes nothing until then")
	addBusFlags(fs, &o.ctl)
	flagcheck.Install(fs, map[string]flagcheck.Check{
		"passes": flagcheck.AtLeast(1), "interval": flagcheck.Positive, "silent-after": flagcheck.Positive,
		"listen": flagcheck.Optional(flagcheck.ListenAddr), "advertise": flagcheck.Optional(flagcheck.URLOf("https", "http")), "bus-listen": flagcheck.Optional(flagcheck.ListenAddr),
		"nats": flagcheck.Optional(flagcheck.ListOf(flagcheck.URLOf("nats", "tls", "ws", "wss"))),
	})
	return cmd
}

// The example mesh, which --once and --passes set up when --mesh or
// --modules leaves it out (a plain up sets up nothing, so its help shows no
// default it would not use).
const (
	exampleMesh    = "examples/local/mesh.yaml"
	exampleModules = "examples/local/modules"
)

// fillExample names the example's file and directory for what the flags
// leave out.
func (o *upOptions) fillExample() {
	if o.meshPath == "" {
		o.meshPath = exampleMesh
	}
	if o.modulesDir == "" {
		o.modulesDir = exampleModules
	}
}

// upPasses is mesh up --passes N, the in-process run (meshup.Passes).
func (e *env) upPasses(ctx context.Context, o upOptions) error {
	mf, defs, err := meshup.ReadSetUp(o.meshPath, o.modulesDir)
	if err != nil {
		return err
	}
	sts, err := meshup.Passes(ctx, meshup.PassesConfig{
		Data: o.ctl.Data, File: mf, Modules: defs, Passes: o.passes,
		Check: checkFresh(o.ctl.Data), Clock: e.now, Out: e.stdout,
	})
	if err != nil {
		return err
	}
	meshup.SayPasses(e.stdout, o.where(), sts)
	return nil
}

// checkFresh is the set-up's check on a bolt store in data not made yet.
func checkFresh(data string) func(context.Context, []commands.Command) error {
	return func(ctx context.Context, cs []commands.Command) error { return session.CheckFresh(ctx, data, cs) }
}

// up runs mesh up as the controller (meshup.Up), in the foreground until
// SIGINT or SIGTERM; with --once for one pass, then it prints each node's
// status and where to look: exit 0 when every node reported, 1 otherwise.
func (e *env) up(cmd *cobra.Command, o upOptions, bolt bool) error {
	fs := cmd.Flags()
	cfg := meshup.UpConfig{
		Controller: o.ctl,
		SetUp:      o.once || fs.Changed("mesh") || fs.Changed("modules"), MeshPath: o.meshPath,
		Clock: e.now, Actor: operator(), Once: o.once, TLSCA: o.ctl.TLSCA, Out: e.stdout, Log: e.stderr,
		Ready: func(r controllerd.Ready) error { meshup.SayReady(e.stdout, o.ctl.Data, r, o.once); return nil },
	}
	cfg.Controller.DeferDefines = !o.pushOnDefine
	if o.nats != "" {
		cfg.Controller.NATS = []string{o.nats}
	}
	if err := cfg.Controller.CheckBus(); err != nil {
		return err // bad usage (usage.Err)
	}
	if bolt {
		cfg.Check = checkFresh(o.ctl.Data)
	}
	var err error
	if cfg.SetUp {
		if cfg.File, cfg.Modules, err = meshup.ReadSetUp(o.meshPath, o.modulesDir); err != nil {
			return err
		}
	}
	res, err := meshup.Up(cmd.Context(), cfg)
	if !res.Converged {
		return err
	}
	meshup.SayOnce(e.stdout, o.where(), cfg.File, res)
	if len(res.Missing) > 0 {
		fmt.Fprintf(e.stderr, "mesh: no report recorded within %s from: %s\n", meshup.OnceTimeout, strings.Join(res.Missing, ", "))
		return errors.Join(&exitError{code: exitFailed}, err)
	}
	return err
}

// where is what up's "where to look" names.
func (o upOptions) where() meshup.Where {
	return meshup.Where{Data: o.ctl.Data, Store: o.ctl.Store, MeshPath: o.meshPath}
}
