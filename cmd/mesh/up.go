package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/daemon"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/internal/safego"
	"meshplane/meshup"
	"meshplane/sim"
)

// upOptions are mesh up's flags. Without --passes, up is the controller
// (env.up); --passes N is the in-process run (env.upPasses: define, set up,
// run N passes over simulated nodes in this process, exit), kept for
// scripts and golden tests that need no processes.
type upOptions struct {
	data       string
	store      string // --store: "" or "bolt" for the file in data, else a URL
	modulesDir string
	meshPath   string
	passes     int

	listen, busListen, nats string
	tlsCert, tlsKey, tlsCA  string
	insecure, once          bool
	interval                time.Duration
	bus                     busOptions // up_bus.go

	// dataID is the data directory's id (dataID): the label of what up
	// makes on an engine.
	dataID string
}

// controllerFlags are the controller's flags, refused with --passes.
var controllerFlags = []string{"listen", "bus-listen", "nats", "tls-cert", "tls-key", "insecure", "interval", "once"}

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
				return e.up(cmd, o)
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
	fs.StringVar(&o.tlsCert, "tls-cert", "", "controller: serve the API and the bus with this PEM certificate `file`")
	fs.StringVar(&o.tlsKey, "tls-key", "", "controller: the certificate's PEM key `file`")
	fs.BoolVar(&o.insecure, "insecure", false, "controller: serve beyond loopback without TLS")
	fs.DurationVar(&o.interval, "interval", 5*time.Minute, "controller: compose every node and push what changed every `duration`")
	fs.BoolVar(&o.once, "once", false, "controller: set up, run one pass, and exit")
	addBusFlags(fs, &o.bus)
	checkFlags(fs, map[string]flagCheck{
		"passes": atLeast(1), "interval": positive,
		"listen": optional(listenAddr), "bus-listen": optional(listenAddr),
		"nats": optional(listOf(urlOf("nats", "tls", "ws", "wss"))),
	})
	return cmd
}

// upPasses is mesh up --passes N, the in-process run: every node
// simulated in this process, no bus, no API, N passes of push and apply.
func (e *env) upPasses(ctx context.Context, o upOptions) error {
	data, modulesDir, meshPath, passes := &o.data, &o.modulesDir, &o.meshPath, &o.passes
	mf, err := meshup.ReadFile(*meshPath)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(*modulesDir, "*.yaml"))
	if err != nil {
		return err
	}
	defs, err := readModuleFiles(files)
	if err != nil {
		return err
	}
	id, saveID, err := meshup.DataID(*data)
	if err != nil {
		return err
	}
	builds, err := meshup.BuildImages(ctx, mf, id, e.stdout)
	if err != nil {
		return err
	}

	cs := meshup.SetUp(defs, mf, meshup.RecordBuilds(builds))
	if err := checkFresh(ctx, *data, cs); err != nil {
		return setUpRefused(err)
	}

	store, err := storeurl.Open(ctx, string(storeurl.Bolt), storeurl.Options{Data: *data, Create: true})
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := saveID(); err != nil {
		return err
	}
	m := sim.New(store, sim.WithClock(e.now))
	w := e.stdout
	fmt.Fprintf(w, "meshplane: event store %s\n", storeurl.Path(*data))

	// The set-up, as operator commands, all or nothing; work already done
	// appends nothing, so `mesh up` can run again over the same data.
	done, err := meshup.Execute(ctx, m.Handler, sim.Actor, cs)
	if err != nil {
		return err
	}
	for _, n := range mf.Nodes {
		node, err := m.Node(n.Name)
		if err != nil {
			return err
		}
		for _, dir := range n.Found {
			if err := node.Runtime.MakeDirectory(dir, 0o755); err != nil {
				return err
			}
		}
	}
	if done > 0 {
		fmt.Fprintf(w, "set-up: %d of %d command(s) found their work already done, nothing to do\n", done, len(cs))
	}
	fmt.Fprintf(w, "defined %d module(s); %d simulated node(s)\n\n", len(defs), len(mf.Nodes))

	for i := 0; i < *passes; i++ {
		for _, n := range mf.Nodes {
			r, applied, err := m.Pass(ctx, n.Name)
			if err != nil {
				return err
			}
			switch {
			case applied:
				fmt.Fprintf(w, "pass %d  %-8s %s  %s\n", i+1, n.Name, r.Outcome.Declaration, r.Summary())
			default:
				fmt.Fprintf(w, "pass %d  %-8s nothing pushed yet\n", i+1, n.Name)
			}
		}
	}
	fmt.Fprintln(w)
	if err := m.CatchUp(ctx); err != nil {
		return err
	}
	for _, n := range mf.Nodes {
		st, err := m.Views.Status.Of(n.Name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-8s sync %-10s health %s\n", n.Name, st.Sync, health(st.Health, st.Held))
		if st.ComposeFailed != nil {
			fmt.Fprintf(w, "         last compose failed: %s\n", st.ComposeFailed.Error)
		}
	}
	dataArg := ""
	if *data != ".mesh" {
		dataArg = " --data " + *data
	}
	fmt.Fprintf(w, `
where to look (the store is closed when this exits; every answer comes from its events):
  go run ./cmd/mesh status%[1]s
  go run ./cmd/mesh node show%[1]s NODE
  go run ./cmd/mesh timeline%[1]s --node NODE
  go run ./cmd/mesh why%[1]s NODE RESOURCE
  go run ./cmd/mesh churn%[1]s
`, dataArg)
	return nil
}

// setUpRefused says of a refused set-up that nothing was written.
var setUpRefused = meshup.Refused

// controllerLogFile, in the data directory, gets the controller's log
// under --once (appended), which keeps the terminal for the result.
const controllerLogFile = "controller.log"

// onceTimeout bounds how long `mesh up --once` waits for every node's
// report after its push.
const onceTimeout = 60 * time.Second

// up runs mesh up as the controller (daemon.Run), in the
// foreground until SIGINT or SIGTERM. With --mesh or --modules (or --once,
// which takes their defaults) it first sets up what they name, on the store
// before the controller opens it: one ExecuteAll, so a refused command
// writes none and work already done appends nothing (the API has no request
// for a mixed batch, and the set-up must be all or nothing). The controller
// then serves that store, and up starts one agent process per node of the
// mesh file (DATA/agents/NODE). With --once it pushes every node, waits for
// each node's report, prints their status, and stops the agents and the
// controller: exit 0 when every node reported, 1 otherwise.
func (e *env) up(cmd *cobra.Command, o upOptions) error {
	ctx := cmd.Context()
	fs := cmd.Flags()
	setup := o.once || fs.Changed("mesh") || fs.Changed("modules")
	var mf meshup.File
	var builds []meshup.Build
	if setup {
		id, saveID, err := meshup.DataID(o.data)
		if err != nil {
			return err
		}
		o.dataID = id
		if mf, builds, err = e.setUpStore(ctx, o); err != nil {
			return err
		}
		if o.dataID, err = saveID(); err != nil { // the set-up made the directory
			return err
		}
	}
	rts := meshup.Runtimes(ctx, mf, e.stdout)
	storeNode, storeAt, err := storeServed(mf, rts)
	if err != nil {
		return err
	}
	if storeAt != "" {
		if err := storeFree(storeAt); err != nil {
			return err
		}
	}

	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	if o.once {
		f, err := os.OpenFile(filepath.Join(o.data, controllerLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		log = slog.New(slog.NewTextHandler(f, nil))
	}
	cfg := daemon.Config{
		Data: o.data, Listen: o.listen, BusListen: o.busListen,
		TLSCert: o.tlsCert, TLSKey: o.tlsKey, Insecure: o.insecure,
		Interval: o.interval, Logger: log, Store: o.store,
	}
	if o.nats != "" {
		cfg.NATS = []string{o.nats}
	}
	if err := o.bus.apply(&cfg, o.tlsCA); err != nil {
		return err
	}
	ready := make(chan daemon.Ready, 1)
	cfg.Ready = func(r daemon.Ready) { ready <- r }
	ctlCtx, stopCtl := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCtl()
	done := make(chan error, 1)
	go func() {
		done <- safego.Call("up.controller", log, func() error { return daemon.Run(ctlCtx, cfg) })
	}()
	var r daemon.Ready
	select {
	case r = <-ready:
	case err := <-done:
		return err
	case <-ctx.Done():
		stopCtl()
		return <-done
	}
	if err := writeBusURLs(o.data, r.BusURLs); err != nil {
		stopCtl()
		return errors.Join(err, <-done)
	}
	w := e.stdout
	fmt.Fprintf(w, "controller: API %s (token in %s), bus %s, data %s\n",
		r.APIURL, filepath.Join(o.data, httpapi.TokenFile), strings.Join(r.BusURLs, ","), o.data)
	if !o.once {
		fmt.Fprintf(w, "the CLI against it: export MESH_SERVER=%s MESH_TOKEN=$(cat %s)\n", r.APIURL, filepath.Join(o.data, httpapi.TokenFile))
	}

	if storeAt != "" {
		if err := meshup.StageBuilds(ctx, filepath.Join(o.data, meshup.AgentsDir, storeNode, artifactsDir), builds); err != nil {
			stopCtl()
			return errors.Join(err, <-done)
		}
	}
	agents, err := meshup.StartAgents(meshup.AgentsConfig{
		Data: o.data, DataID: o.dataID, File: mf, Runtimes: rts,
		StoreNode: storeNode, StoreAt: storeAt, Out: w,
		Register: func(node, creds string) error { return daemon.RegisterCreds(o.data, node, creds, r.BusURLs, nil) },
	})
	stop := func() error {
		aerr := agents.Stop()
		stopCtl()
		return errors.Join(aerr, <-done)
	}
	if err != nil {
		return errors.Join(err, stop())
	}
	if storeAt != "" {
		if err := meshup.PushBuilds(ctx, storeAt, builds, e.stdout); err != nil {
			return errors.Join(err, stop())
		}
	}
	if !o.once {
		select {
		case <-ctx.Done():
		case err := <-done:
			done <- err
		}
		return stop()
	}
	perr := e.onePass(ctx, o, r, mf, rts)
	return errors.Join(perr, stop())
}

// setUpStore defines and sets up what --modules and --mesh name, on the
// store in o.data, all or nothing; it says what it did.
func (e *env) setUpStore(ctx context.Context, o upOptions) (meshup.File, []meshup.Build, error) {
	mf, err := meshup.ReadFile(o.meshPath)
	if err != nil {
		return mf, nil, err
	}
	files, err := filepath.Glob(filepath.Join(o.modulesDir, "*.yaml"))
	if err != nil {
		return mf, nil, err
	}
	defs, err := readModuleFiles(files)
	if err != nil {
		return mf, nil, err
	}
	builds, err := meshup.BuildImages(ctx, mf, o.dataID, e.stdout)
	if err != nil {
		return mf, nil, err
	}
	return mf, builds, e.setUpCommands(ctx, o, mf, meshup.SetUp(defs, mf, meshup.RecordBuilds(builds)), len(defs))
}

// setUpCommands executes the set-up cs on the store in o.data, all or
// nothing, and says what it did.
func (e *env) setUpCommands(ctx context.Context, o upOptions, mf meshup.File, cs []commands.Command, modules int) error {
	if k, _ := storeurl.KindOf(o.store); k == storeurl.Bolt {
		if err := checkFresh(ctx, o.data, cs); err != nil {
			return setUpRefused(err)
		}
	}
	store, err := storeurl.Open(ctx, o.store, storeurl.Options{Data: o.data, Create: true})
	if errors.Is(err, boltstore.ErrLocked) {
		return fmt.Errorf("set-up: %w: %w", daemon.ErrStoreHeld, err)
	} else if err != nil {
		return err
	}
	defer store.Close()
	ctl, err := controller.New(controller.Config{Store: store, Clock: e.now})
	if err != nil {
		return err
	}
	done, err := meshup.Execute(ctx, ctl.Handler(), operator(), cs)
	if err != nil {
		return err
	}
	if done > 0 {
		fmt.Fprintf(e.stdout, "set-up: %d of %d command(s) found their work already done, nothing to do\n", done, len(cs))
	}
	fmt.Fprintf(e.stdout, "defined %d module(s); %d node(s) in %s\n", modules, len(mf.Nodes), o.meshPath)
	return store.Close()
}

// onePass is --once: push every node of mf through the controller and
// wait until each node's report of the declaration pushed is recorded, or
// onceTimeout (meshup.Converge), then print each node's status and where
// to look.
func (e *env) onePass(ctx context.Context, o upOptions, r daemon.Ready, mf meshup.File, rts map[string]string) error {
	var opts []httpapi.ClientOption
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		opts = append(opts, httpapi.WithCA(pem))
	}
	c, err := httpapi.NewClient(r.APIURL, r.Token, opts...)
	if err != nil {
		return err
	}
	w := e.stdout
	st, missing, err := meshup.Converge(ctx, c, operator(), mf.NodeNames(), onceTimeout, w)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, s := range st.Nodes {
		fmt.Fprintf(w, "%-8s sync %-10s health %s\n", s.Node, s.Sync, health(s.Health, s.Held))
		if s.Applied != nil {
			fmt.Fprintf(w, "         applied %s: %s\n", s.Applied.Declaration, s.Applied.Summary)
		}
		if s.ComposeFailed != nil {
			fmt.Fprintf(w, "         last compose failed: %s\n", s.ComposeFailed.Error)
		}
	}
	dataArg := ""
	if o.data != ".mesh" {
		dataArg = " --data " + o.data
	}
	if o.store != "" && o.store != "bolt" {
		// The store the events are in, its password (if any) left out.
		shown := o.store
		if u, err := url.Parse(o.store); err == nil {
			shown = u.Redacted()
		}
		dataArg += " --store '" + shown + "'"
	}
	fmt.Fprintf(w, `
where to look (the controller has stopped; every answer comes from the store's events):
  go run ./cmd/mesh status%[1]s
  go run ./cmd/mesh node show%[1]s NODE
  go run ./cmd/mesh timeline%[1]s --node NODE
  go run ./cmd/mesh why%[1]s NODE RESOURCE
  %[2]s/NODE/%[3]s    (each agent's log)
  %[5]s    (the controller's log)
  go run ./cmd/mesh up%[1]s --mesh %[4]s    (the controller and the agents, until Ctrl-C)
`, dataArg, filepath.Join(o.data, meshup.AgentsDir), meshup.LogFile, o.meshPath, filepath.Join(o.data, controllerLogFile))
	var onEngine []string
	for _, n := range mf.Nodes {
		if rts[n.Name] == runtimeDocker {
			onEngine = append(onEngine, n.Name)
		}
	}
	if len(onEngine) > 0 {
		fmt.Fprintf(w, "on the Docker engine (containers keep running after up exits; run up again to reconcile them):\n%s", meshup.DockerCleanup(onEngine, o.dataID))
	}
	if len(missing) > 0 {
		fmt.Fprintf(e.stderr, "mesh: no report recorded within %s from: %s\n", onceTimeout, strings.Join(missing, ", "))
		return &exitError{code: exitFailed}
	}
	return nil
}
