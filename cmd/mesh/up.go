package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/sim"
)

// meshFile describes the nodes of a mesh for `mesh up` (examples/mesh.yaml).
// Nodes are simulated in the process until the agents run over NATS.
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

func readMeshFile(path string) (meshFile, error) {
	var m meshFile
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func cmdUp(ctx context.Context, e *env, args []string) error {
	fs := e.flags("up", "[--data DIR] [--modules DIR] [--mesh FILE] [--passes N]")
	data := dataFlag(fs)
	modulesDir := fs.String("modules", "examples/modules", "the `directory` of module files (*.yaml) to define")
	meshPath := fs.String("mesh", "examples/mesh.yaml", "the `file` describing the nodes")
	passes := fs.Int("passes", 2, "passes (push, then apply) to run on each node")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
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

	l, err := openLocal(*data, true)
	if err != nil {
		return err
	}
	defer l.Close()
	m := sim.New(l.store, sim.WithClock(e.now))
	w := e.stdout
	fmt.Fprintf(w, "meshplane: event store %s\n", filepath.Join(*data, "events.db"))

	// Operator commands. Each is a no-op when the store already says so, so
	// `mesh up` can be run again over the same data directory.
	do := func(c commands.Command) error { return m.Do(ctx, c) }
	for _, d := range defs {
		if err := do(d); err != nil {
			return err
		}
	}
	for _, a := range mf.Artifacts {
		if err := do(commands.RecordArtifact{Module: a.Module, Name: a.Name, Digest: a.Digest}); err != nil {
			return err
		}
	}
	for _, n := range mf.Nodes {
		if err := do(commands.RegisterNode{Node: n.Name}); err != nil {
			return err
		}
		if n.Adopted {
			if err := do(commands.AdoptNode{Node: n.Name}); err != nil {
				return err
			}
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
		keys := make([]string, 0, len(settings))
		for k := range settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := do(commands.SetNodeSetting{Node: n.Name, Key: k, Value: settings[k]}); err != nil {
				return err
			}
		}
		for _, mod := range n.Modules {
			if err := do(commands.AssignModule{Module: mod, Node: n.Name}); err != nil {
				return err
			}
		}
		for _, mod := range n.Take {
			if err := do(commands.TakeModule{Module: mod, Node: n.Name}); err != nil {
				return err
			}
		}
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
