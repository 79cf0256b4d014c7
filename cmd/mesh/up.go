package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"meshplane/agent"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/daemon"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/internal/safego"
	"meshplane/sim"
)

// meshFile describes the nodes of a mesh for `mesh up` (examples/mesh.yaml,
// examples/local/mesh.yaml). `mesh up` runs one agent process per node on
// this machine: on the simulated runtime, or, for a node that says
// runtime: docker, on the local Docker engine when one answers.
//
//	nodes:
//	  - name: local
//	    runtime: docker          # sim (the default) or docker: this machine's engine, else sim
//	    adopted: true
//	    private-address: 127.0.0.1
//	    ports: {store: 6852}
//	    artifact-store: 7481     # the node holds the artifact store on this port
//	    modules: [hello]
//	    take: [hello]
//	    found: [/var/lib/x]      # directories already on a simulated node
//	artifacts:                   # builds made elsewhere: recorded as they are
//	  - {module: forge, name: forge/web, digest: "sha256:…"}
//	builds:                      # builds mesh up makes: a Go main package as an image (package imagebuild)
//	  - {module: hello, name: hello/web, program: meshplane/cmd/mesh-demo}
type meshFile struct {
	Nodes []struct {
		Name           string         `yaml:"name"`
		Runtime        string         `yaml:"runtime,omitempty"`
		Adopted        bool           `yaml:"adopted,omitempty"`
		PrivateAddress string         `yaml:"private-address,omitempty"`
		Ports          map[string]int `yaml:"ports,omitempty"`
		ArtifactStore  int            `yaml:"artifact-store,omitempty"`
		Modules        []string       `yaml:"modules,omitempty"`
		Take           []string       `yaml:"take,omitempty"`
		Found          []string       `yaml:"found,omitempty"` // directories already on the (simulated) machine
	} `yaml:"nodes"`
	Artifacts []struct {
		Module string `yaml:"module"`
		Name   string `yaml:"name"`
		Digest string `yaml:"digest"`
	} `yaml:"artifacts,omitempty"`
	Builds []struct {
		Module  string `yaml:"module"`
		Name    string `yaml:"name"`
		Program string `yaml:"program"`
	} `yaml:"builds,omitempty"`
}

// maxMeshFileSize is the largest mesh file `mesh up` reads: 1 MiB, as
// commands.MaxModuleFileSize. A larger file is refused unread past it.
const maxMeshFileSize = 1 << 20

// errMeshFile marks a mesh file refused as malformed.
var errMeshFile = errors.New("malformed mesh file")

// meshFileError names the file (and the field) a mesh file is refused for.
type meshFileError struct{ file, field, msg string }

func (e *meshFileError) Error() string {
	if e.field == "" {
		return e.file + ": " + e.msg
	}
	return e.file + ": " + e.field + ": " + e.msg
}

func (e *meshFileError) Is(target error) bool { return target == errMeshFile }

// readMeshFile reads and checks a mesh file. What the commands check (names,
// settings, digests) they refuse at the door of the set-up; here are the
// checks that need the whole file: its size, its fields, a node listed
// twice, and the found directories, which go to the simulated machine
// rather than the store.
func readMeshFile(path string) (meshFile, error) {
	var m meshFile
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return m, err
	} else if st.IsDir() {
		return m, &meshFileError{file: path, msg: "a directory, not a mesh file"}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMeshFileSize+1))
	if err != nil {
		return m, fmt.Errorf("read %s: %w", path, err)
	}
	return parseMeshFile(path, b)
}

// parseMeshFile parses and checks a mesh file's bytes; path names it in
// errors, which are all errMeshFile.
func parseMeshFile(path string, b []byte) (meshFile, error) {
	var m meshFile
	if len(b) > maxMeshFileSize {
		return m, &meshFileError{file: path, msg: fmt.Sprintf("larger than %d bytes (1 MiB): not a mesh file", maxMeshFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return meshFile{}, &meshFileError{file: path, msg: err.Error()}
	}
	if err := checkMeshNames(path, m); err != nil {
		return m, err
	}
	seen := map[string]int{}
	for i, n := range m.Nodes {
		if j, dup := seen[n.Name]; dup {
			return m, &meshFileError{file: path, field: fmt.Sprintf("nodes[%d].name", i), msg: fmt.Sprintf("node %.40q is listed twice: also nodes[%d]", n.Name, j)}
		}
		seen[n.Name] = i
		if n.Runtime != "" && n.Runtime != runtimeSim && n.Runtime != runtimeDocker {
			return m, &meshFileError{file: path, field: fmt.Sprintf("nodes[%d].runtime", i), msg: fmt.Sprintf("%.40q: want %s or %s", n.Runtime, runtimeSim, runtimeDocker)}
		}
		for k, dir := range n.Found {
			if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
				return m, &meshFileError{file: path, field: fmt.Sprintf("nodes[%d].found[%d]", i, k), msg: fmt.Sprintf("%.80q is not a clean absolute path", dir)}
			}
		}
	}
	for i, b := range m.Builds {
		if b.Program == "" {
			return m, &meshFileError{file: path, field: fmt.Sprintf("builds[%d].program", i), msg: "empty: name the Go main package to build (meshplane/cmd/mesh-demo)"}
		}
		for j, a := range m.Artifacts {
			if a.Module == b.Module && a.Name == b.Name {
				return m, &meshFileError{file: path, field: fmt.Sprintf("builds[%d]", i), msg: fmt.Sprintf("artifact %.40q of module %.40q is also in artifacts[%d]: one build per artifact", b.Name, b.Module, j)}
			}
		}
	}
	return m, nil
}

// checkMeshNames checks every name of a mesh file by the one rule
// (events.CheckName), before anything is built or written: node names
// (each also a directory of the data directory), the modules each node
// runs and takes, its port names, and the modules and artifact names of
// artifacts and builds.
func checkMeshNames(path string, m meshFile) error {
	bad := func(field string, err error) error {
		return &meshFileError{file: path, field: field, msg: err.Error() + " (nothing was written)"}
	}
	for i, n := range m.Nodes {
		if err := events.CheckName("node", n.Name); err != nil {
			return bad(fmt.Sprintf("nodes[%d].name", i), err)
		}
		for _, list := range []struct {
			key  string
			mods []string
		}{{"modules", n.Modules}, {"take", n.Take}} {
			for j, mod := range list.mods {
				if err := events.CheckName("module", mod); err != nil {
					return bad(fmt.Sprintf("nodes[%d].%s[%d]", i, list.key, j), err)
				}
			}
		}
		for _, port := range slices.Sorted(maps.Keys(n.Ports)) {
			if err := events.CheckName("port", port); err != nil {
				return bad(fmt.Sprintf("nodes[%d].ports.%s", i, port), err)
			}
		}
	}
	for i, a := range m.Artifacts {
		if err := events.CheckName("module", a.Module); err != nil {
			return bad(fmt.Sprintf("artifacts[%d].module", i), err)
		}
		if err := commands.CheckArtifact(a.Name); err != nil {
			return bad(fmt.Sprintf("artifacts[%d].name", i), err)
		}
	}
	for i, b := range m.Builds {
		if err := events.CheckName("module", b.Module); err != nil {
			return bad(fmt.Sprintf("builds[%d].module", i), err)
		}
		if err := commands.CheckArtifact(b.Name); err != nil {
			return bad(fmt.Sprintf("builds[%d].name", i), err)
		}
	}
	return nil
}

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
	mf, err := readMeshFile(*meshPath)
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
	id, saveID, err := dataID(*data)
	if err != nil {
		return err
	}
	builds, err := e.buildImages(ctx, mf, id)
	if err != nil {
		return err
	}

	cs := setUp(defs, mf, builds)
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

	// The set-up, as operator commands, checked all together before any is
	// written (a refused one writes none). A command whose work is already
	// done appends nothing, so `mesh up` can run again over the same data.
	results, err := m.Handler.ExecuteAll(ctx, sim.Actor, cs)
	if err != nil && len(results) == 0 {
		return setUpRefused(err)
	} else if err != nil {
		return fmt.Errorf("set-up: %w", err)
	}
	done := 0
	for _, evs := range results {
		if len(evs) == 0 {
			done++
		}
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
func setUpRefused(err error) error {
	var rej *commands.Rejection
	if errors.As(err, &rej) {
		return &commands.Rejection{Code: rej.Code, Msg: fmt.Sprintf("set-up: %s (nothing was written)", rej.Msg)}
	}
	return fmt.Errorf("set-up: %w", err)
}

// setUp is the set-up a mesh file asks for, as operator commands in order:
// define the modules, record the builds (the mesh file's artifacts:, then
// the images up built for its builds:), then each node: register, adopt,
// settings, assign, take.
func setUp(defs []commands.DefineModule, mf meshFile, builds []builtImage) []commands.Command {
	var cs []commands.Command
	for _, d := range defs {
		cs = append(cs, d)
	}
	for _, a := range mf.Artifacts {
		cs = append(cs, commands.RecordArtifact{Module: a.Module, Name: a.Name, Digest: a.Digest})
	}
	cs = append(cs, recordBuilds(builds)...)
	for _, n := range mf.Nodes {
		cs = append(cs, commands.RegisterNode{Node: n.Name})
		if n.Adopted {
			cs = append(cs, commands.AdoptNode{Node: n.Name})
		}
		settings := map[string]string{}
		if n.PrivateAddress != "" {
			settings[events.SettingPrivateAddress] = n.PrivateAddress
		}
		if n.ArtifactStore != 0 {
			settings[events.SettingArtifactStore] = strconv.Itoa(n.ArtifactStore)
		}
		for p, v := range n.Ports {
			settings[events.SettingPortPrefix+p] = strconv.Itoa(v)
		}
		for _, k := range slices.Sorted(maps.Keys(settings)) {
			cs = append(cs, commands.SetNodeSetting{Node: n.Name, Key: k, Value: settings[k]})
		}
		for _, mod := range n.Modules {
			cs = append(cs, commands.AssignModule{Module: mod, Node: n.Name})
		}
		for _, mod := range n.Take {
			cs = append(cs, commands.TakeModule{Module: mod, Node: n.Name})
		}
	}
	return cs
}

// Where `mesh up` keeps the local agents it starts, in its data directory:
// DATA/agents/NODE/ is one agent's data directory (its outbox and lock),
// holding creds.json (the node's bus credentials, mode 0600) and agent.log
// (the agent process's output, appended).
const (
	agentsDir      = "agents"
	agentCredsFile = "creds.json"
	agentLogFile   = "agent.log"
	// dockerRootDir, in an agent's directory, holds a node on the Docker
	// runtime's directories and files (--docker-root): up does not write
	// to this machine's /etc or /var/lib for the example.
	dockerRootDir = "root"

	// controllerLogFile, in the data directory, gets the controller's log
	// under --once (appended), which keeps the terminal for the result.
	controllerLogFile = "controller.log"
)

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
	var mf meshFile
	var builds []builtImage
	if setup {
		id, saveID, err := dataID(o.data)
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
	rts := e.nodeRuntimes(ctx, mf)
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
		if err := stageBuilds(ctx, filepath.Join(o.data, agentsDir, storeNode, artifactsDir), builds); err != nil {
			stopCtl()
			return errors.Join(err, <-done)
		}
	}
	agents, err := startAgents(o.data, o.dataID, mf, rts, storeNode, storeAt, r.BusURLs, w)
	stop := func() error {
		aerr := agents.stop()
		stopCtl()
		return errors.Join(aerr, <-done)
	}
	if err != nil {
		return errors.Join(err, stop())
	}
	if storeAt != "" {
		if err := e.pushBuilds(ctx, storeAt, builds); err != nil {
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
func (e *env) setUpStore(ctx context.Context, o upOptions) (meshFile, []builtImage, error) {
	mf, err := readMeshFile(o.meshPath)
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
	builds, err := e.buildImages(ctx, mf, o.dataID)
	if err != nil {
		return mf, nil, err
	}
	return mf, builds, e.setUpCommands(ctx, o, mf, setUp(defs, mf, builds), len(defs))
}

// setUpCommands executes the set-up cs on the store in o.data, all or
// nothing, and says what it did.
func (e *env) setUpCommands(ctx context.Context, o upOptions, mf meshFile, cs []commands.Command, modules int) error {
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
	results, err := ctl.Handler().ExecuteAll(ctx, operator(), cs)
	if err != nil && len(results) == 0 {
		return setUpRefused(err)
	} else if err != nil {
		return fmt.Errorf("set-up: %w", err)
	}
	done := 0
	for _, evs := range results {
		if len(evs) == 0 {
			done++
		}
	}
	if done > 0 {
		fmt.Fprintf(e.stdout, "set-up: %d of %d command(s) found their work already done, nothing to do\n", done, len(cs))
	}
	fmt.Fprintf(e.stdout, "defined %d module(s); %d node(s) in %s\n", modules, len(mf.Nodes), o.meshPath)
	return store.Close()
}

// agentProcs are the agent processes `mesh up` started.
type agentProcs []*exec.Cmd

// startAgents starts one agent process per node of mf, on the runtime rts
// gives it: sim (the mesh file's found: directories passed as --sim-found),
// or docker (the engine the environment names; the node's paths under
// DATA/agents/NODE/root, its engine names prefixed "NODE-", everything it
// makes there labelled with the data directory's id, dataID). Each has its
// credentials written into DATA/agents/NODE and its output appended to
// agent.log there; the agent of storeNode serves the artifact store on
// storeAt. On an error the ones started are stopped by the caller (stop).
func startAgents(data, dataID string, mf meshFile, rts map[string]string, storeNode, storeAt string, busURLs []string, w io.Writer) (agentProcs, error) {
	if len(mf.Nodes) == 0 {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start agents: %w", err)
	}
	var procs agentProcs
	for _, n := range mf.Nodes {
		dir := filepath.Join(data, agentsDir, n.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
		}
		creds := filepath.Join(dir, agentCredsFile)
		if err := daemon.RegisterCreds(data, n.Name, creds, busURLs, nil); err != nil {
			return procs, err
		}
		logf, err := os.OpenFile(filepath.Join(dir, agentLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
		}
		rt := rts[n.Name]
		args := []string{"agent", "--creds", creds, "--data", dir, "--runtime", rt}
		switch rt {
		case runtimeDocker:
			root, err := filepath.Abs(filepath.Join(dir, dockerRootDir))
			if err == nil {
				err = os.MkdirAll(root, 0o755)
			}
			if err != nil {
				return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
			}
			args = append(args, "--docker-root", root, "--docker-prefix", n.Name+"-",
				"--docker-label", agent.LabelData+"="+dataID)
		default:
			if len(n.Found) > 0 {
				args = append(args, "--sim-found", strings.Join(n.Found, ","))
			}
		}
		if n.Name == storeNode {
			args = append(args, "--artifact-store", storeAt)
		}
		c := exec.Command(exe, args...)
		c.Stdout, c.Stderr = logf, logf
		c.Env = append(os.Environ(), "MESH_SERVER=", "MESH_TOKEN=")
		// Its own process group: a Ctrl-C at the terminal reaches up, which
		// stops the agents itself, in order.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = c.Start()
		logf.Close() // the child has its own descriptor
		if err != nil {
			return procs, fmt.Errorf("start agent %s: %w", n.Name, err)
		}
		procs = append(procs, c)
		fmt.Fprintf(w, "agent %-8s pid %d, runtime %s, log %s\n", n.Name, c.Process.Pid, rt, filepath.Join(dir, agentLogFile))
		if n.Name == storeNode {
			fmt.Fprintf(w, "agent %-8s serves the artifact store on %s (%s)\n", n.Name, storeAt, filepath.Join(dir, artifactsDir))
		}
	}
	return procs, nil
}

// stop stops every agent: SIGTERM (a clean stop: its outbox is on disk),
// then SIGKILL after 10 s.
func (ps agentProcs) stop() error {
	var errs []error
	for _, c := range ps {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range ps {
		exited := make(chan error, 1)
		go func() { exited <- c.Wait() }()
		select {
		case err := <-exited:
			if err != nil && !terminated(err) {
				errs = append(errs, fmt.Errorf("agent pid %d: %w", c.Process.Pid, err))
			}
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-exited
			errs = append(errs, fmt.Errorf("agent pid %d: did not stop in 10 s: killed", c.Process.Pid))
		}
	}
	return errors.Join(errs...)
}

// terminated says whether err is a process's exit by SIGTERM: an agent
// stopped before it set up its own handling of the signal (it had started
// nothing yet), not a failure.
func terminated(err error) bool {
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		return false
	}
	ws, ok := xe.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// onePass is --once: push every node of mf through the controller, wait
// until each node's report of the declaration pushed is recorded (or
// onceTimeout), and print each node's status and where to look.
func (e *env) onePass(ctx context.Context, o upOptions, r daemon.Ready, mf meshFile, rts map[string]string) error {
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
	// A report counts if it is recorded after the push: past the position
	// each node's last apply had before it (a declaration unchanged since
	// the last run is applied again by the agent that starts now).
	before, err := c.Status(ctx, api.StatusRequest{})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	since := map[string]uint64{}
	for _, s := range before.Nodes {
		if s.Applied != nil {
			since[s.Node] = s.Applied.Position
		}
	}
	pushed := map[string]string{}
	for _, n := range mf.Nodes {
		res, err := c.Push(ctx, api.PushRequest{Operator: operator(), Node: n.Name})
		if err != nil {
			return fmt.Errorf("push %s: %w", n.Name, err)
		}
		for _, p := range res.Pushes {
			if p.Error != "" {
				fmt.Fprintf(w, "push  %-8s failed: %s\n", p.Node, p.Error)
				continue
			}
			pushed[p.Node] = p.Declaration
			fmt.Fprintf(w, "push  %-8s %s\n", p.Node, p.Declaration)
		}
	}

	wctx, cancel := context.WithTimeout(ctx, onceTimeout)
	defer cancel()
	var st api.StatusResponse
	for {
		st, err = c.Status(wctx, api.StatusRequest{})
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if len(unreported(st, pushed, since)) == 0 || wctx.Err() != nil {
			break
		}
		select {
		case <-wctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
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
`, dataArg, filepath.Join(o.data, agentsDir), agentLogFile, o.meshPath, filepath.Join(o.data, controllerLogFile))
	var onEngine []string
	for _, n := range mf.Nodes {
		if rts[n.Name] == runtimeDocker {
			onEngine = append(onEngine, n.Name)
		}
	}
	if len(onEngine) > 0 {
		fmt.Fprintf(w, "on the Docker engine (containers keep running after up exits; run up again to reconcile them):\n%s", dockerCleanup(onEngine, o.dataID))
	}
	if missing := unreported(st, pushed, since); len(missing) > 0 {
		fmt.Fprintf(e.stderr, "mesh: no report recorded within %s from: %s\n", onceTimeout, strings.Join(missing, ", "))
		return &exitError{code: exitFailed}
	}
	return nil
}

// unreported are the nodes pushed whose report of that declaration is not
// recorded in st past position since[node] (sorted).
func unreported(st api.StatusResponse, pushed map[string]string, since map[string]uint64) []string {
	applied := map[string]string{}
	for _, s := range st.Nodes {
		if s.Applied != nil && s.Applied.Position > since[s.Node] {
			applied[s.Node] = s.Applied.Declaration
		}
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(pushed)) {
		if applied[n] != pushed[n] {
			out = append(out, n)
		}
	}
	return out
}
