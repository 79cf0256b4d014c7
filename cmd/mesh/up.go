package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/sim"
)

// meshFile describes the nodes of a mesh for `mesh up` (examples/mesh.yaml).
// Nodes are simulated in this process (sim.Mesh): there is no transport to
// agents on other machines yet.
type meshFile struct {
	Nodes []struct {
		Name           string         `yaml:"name"`
		Adopted        bool           `yaml:"adopted"`
		PrivateAddress string         `yaml:"private-address"`
		Ports          map[string]int `yaml:"ports"`
		ArtifactStore  int            `yaml:"artifact-store"`
		Modules        []string       `yaml:"modules"`
		Take           []string       `yaml:"take"`
		Found          []string       `yaml:"found"` // directories already on the (simulated) machine
	} `yaml:"nodes"`
	Artifacts []struct {
		Module string `yaml:"module"`
		Name   string `yaml:"name"`
		Digest string `yaml:"digest"`
	} `yaml:"artifacts"`
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
	seen := map[string]int{}
	for i, n := range m.Nodes {
		if j, dup := seen[n.Name]; dup {
			return m, &meshFileError{file: path, field: fmt.Sprintf("nodes[%d].name", i), msg: fmt.Sprintf("node %.40q is listed twice: also nodes[%d]", n.Name, j)}
		}
		seen[n.Name] = i
		for k, dir := range n.Found {
			if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
				return m, &meshFileError{file: path, field: fmt.Sprintf("nodes[%d].found[%d]", i, k), msg: fmt.Sprintf("%.80q is not a clean absolute path", dir)}
			}
		}
	}
	return m, nil
}

// upOptions are mesh up's flags. The in-process run (define, set up, run
// passes over simulated nodes in this process, exit) is what up does
// without any of the daemon's flags; with one of them (--listen, --once,
// ...) up is the controller (upDaemon).
type upOptions struct {
	data       string
	modulesDir string
	meshPath   string
	passes     int

	listen, busListen, nats string
	tlsCert, tlsKey, tlsCA  string
	insecure, once          bool
	interval                time.Duration
}

// daemonFlags are the flags that make mesh up the controller.
var daemonFlags = []string{"listen", "bus-listen", "nats", "tls-cert", "tls-key", "insecure", "interval", "once"}

func (e *env) upCmd() *cobra.Command {
	var o upOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "run the mesh on embedded defaults: define the modules, set up the nodes, push and apply (local store only)",
		Long: `Run the mesh on embedded defaults: define the modules of --modules, set up the
nodes of --mesh (each command checked first: one refused writes none), then
run --passes passes (push, then apply) on simulated nodes in this process, and
exit. Running it again over the same data appends no set-up twice.

With --listen, --once or another of the controller's flags, up is the
controller: the store, the bus, the projections and the HTTP API, in the
foreground until SIGINT or SIGTERM.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			o.data, o.tlsCA = t.data, t.tlsCA
			for _, f := range daemonFlags {
				if cmd.Flags().Changed(f) {
					return upDaemon(cmd, o)
				}
			}
			return e.up(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.modulesDir, "modules", "examples/modules", "the `directory` of module files (*.yaml) to define")
	fs.StringVar(&o.meshPath, "mesh", "examples/mesh.yaml", "the `file` describing the nodes")
	fs.IntVar(&o.passes, "passes", 2, "passes (push, then apply) to run on each node")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7480", "controller: serve the HTTP API on this `address`")
	fs.StringVar(&o.busListen, "bus-listen", "127.0.0.1:4222", "controller: the embedded NATS server listens on this `address`")
	fs.StringVar(&o.nats, "nats", "", "controller: use the NATS cluster at this `URL` instead of the embedded server")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "controller: serve the API and the bus with this PEM certificate `file`")
	fs.StringVar(&o.tlsKey, "tls-key", "", "controller: the certificate's PEM key `file`")
	fs.BoolVar(&o.insecure, "insecure", false, "controller: serve beyond loopback without TLS")
	fs.DurationVar(&o.interval, "interval", 5*time.Minute, "controller: compose every node and push what changed every `duration`")
	fs.BoolVar(&o.once, "once", false, "controller: set up, run one pass, and exit")
	return cmd
}

// up is the in-process run.
func (e *env) up(ctx context.Context, o upOptions) error {
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

	cs := setUp(defs, mf)
	if err := checkFresh(ctx, *data, cs); err != nil {
		return setUpRefused(err)
	}

	if err := os.MkdirAll(*data, 0o755); err != nil {
		return err
	}
	store, err := boltstore.Open(filepath.Join(*data, "events.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	m := sim.New(store, sim.WithClock(e.now))
	w := e.stdout
	fmt.Fprintf(w, "meshplane: event store %s\n", filepath.Join(*data, "events.db"))

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
		fmt.Fprintf(w, "%-8s sync %-10s health %s\n", n.Name, st.Sync, health(st))
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
// define the modules, record the builds, then each node: register, adopt,
// settings, assign, take.
func setUp(defs []commands.DefineModule, mf meshFile) []commands.Command {
	var cs []commands.Command
	for _, d := range defs {
		cs = append(cs, d)
	}
	for _, a := range mf.Artifacts {
		cs = append(cs, commands.RecordArtifact{Module: a.Module, Name: a.Name, Digest: a.Digest})
	}
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
