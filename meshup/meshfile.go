// Package meshup is what `mesh up` does, testable without the CLI: the
// mesh file (File, ParseFile) and the set-up it turns into operator
// commands (SetUp, Execute: all or nothing), the images of its builds:
// (BuildImages, put into the artifact store by StageBuilds and
// PushBuilds), the data directory's id that labels what up makes on an
// engine (DataID, DockerCleanup), the runtime each node runs on
// (Runtimes), where the artifact store is served on this machine
// (StoreServed, StoreFree), the local supervisor of one agent process per
// node (StartAgents, Agents.Stop; its agents die with up, and an earlier
// up's orphans are stopped: orphans.go; a docker node's engine names carry
// the data directory's id: DockerPrefixFile), and the convergence wait of --once
// (Converge: push every node, wait until each node's report is recorded).
//
// Two functions put them together: Up is `mesh up` (the set-up on the
// store named, then the controller, package controllerd, and the agents; with
// Once one pass and a stop), Passes is `mesh up --passes N` (the set-up on
// the bolt store and N passes over nodes simulated in this process,
// package sim). cmd/mesh reads the files the flags name, fills their
// configuration, and prints what they return.
//
// Each part is testable without the CLI: the parser takes bytes, the
// set-up returns commands and runs on a *commands.Handler, the supervisor
// takes the program to run and how to write a node's credentials, and the
// wait takes anything with the API's Status and Push (the API's client, a
// fake).
package meshup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"

	"meshplane/agent/agentd"
	"meshplane/commands"
	"meshplane/events"
)

// Runtimes a mesh file's node (runtime:) and `mesh agent --runtime` name
// (the agent's, package agentd).
const (
	// RuntimeSim is the simulated runtime, in memory (the default).
	RuntimeSim = agentd.RuntimeSim
	// RuntimeDocker is this machine's Docker engine.
	RuntimeDocker = agentd.RuntimeDocker
)

// File describes the nodes of a mesh for `mesh up` (examples/mesh.yaml,
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
type File struct {
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

// NodeNames are the names of f's nodes, in the file's order.
func (f File) NodeNames() []string {
	names := make([]string, 0, len(f.Nodes))
	for _, n := range f.Nodes {
		names = append(names, n.Name)
	}
	return names
}

// MaxFileSize is the largest mesh file `mesh up` reads: 1 MiB, as
// commands.MaxModuleFileSize. A larger file is refused unread past it.
const MaxFileSize = 1 << 20

// ErrMeshFile marks a mesh file refused as malformed.
var ErrMeshFile = errors.New("malformed mesh file")

// fileError names the file (and the field) a mesh file is refused for.
type fileError struct{ file, field, msg string }

func (e *fileError) Error() string {
	if e.field == "" {
		return e.file + ": " + e.msg
	}
	return e.file + ": " + e.field + ": " + e.msg
}

func (e *fileError) Is(target error) bool { return target == ErrMeshFile }

// ReadFile reads and checks a mesh file. What the commands check (names,
// settings, digests) they refuse at the door of the set-up; here are the
// checks that need the whole file: its size, its fields, a node listed
// twice, and the found directories, which go to the simulated machine
// rather than the store.
func ReadFile(path string) (File, error) {
	var m File
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return m, err
	} else if st.IsDir() {
		return m, &fileError{file: path, msg: "a directory, not a mesh file"}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return m, fmt.Errorf("read %s: %w", path, err)
	}
	return ParseFile(path, b)
}

// ParseFile parses and checks a mesh file's bytes; path names it in
// errors, which are all ErrMeshFile.
func ParseFile(path string, b []byte) (File, error) {
	var m File
	if len(b) > MaxFileSize {
		return m, &fileError{file: path, msg: fmt.Sprintf("larger than %d bytes (1 MiB): not a mesh file", MaxFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return File{}, &fileError{file: path, msg: err.Error()}
	}
	if err := checkNames(path, m); err != nil {
		return m, err
	}
	seen := map[string]int{}
	for i, n := range m.Nodes {
		if j, dup := seen[n.Name]; dup {
			return m, &fileError{file: path, field: fmt.Sprintf("nodes[%d].name", i), msg: fmt.Sprintf("node %.40q is listed twice: also nodes[%d]", n.Name, j)}
		}
		seen[n.Name] = i
		if n.Runtime != "" && n.Runtime != RuntimeSim && n.Runtime != RuntimeDocker {
			return m, &fileError{file: path, field: fmt.Sprintf("nodes[%d].runtime", i), msg: fmt.Sprintf("%.40q: want %s or %s", n.Runtime, RuntimeSim, RuntimeDocker)}
		}
		for k, dir := range n.Found {
			if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
				return m, &fileError{file: path, field: fmt.Sprintf("nodes[%d].found[%d]", i, k), msg: fmt.Sprintf("%.80q is not a clean absolute path", dir)}
			}
		}
	}
	for i, b := range m.Builds {
		if b.Program == "" {
			return m, &fileError{file: path, field: fmt.Sprintf("builds[%d].program", i), msg: "empty: name the Go main package to build (meshplane/cmd/mesh-demo)"}
		}
		for j, a := range m.Artifacts {
			if a.Module == b.Module && a.Name == b.Name {
				return m, &fileError{file: path, field: fmt.Sprintf("builds[%d]", i), msg: fmt.Sprintf("artifact %.40q of module %.40q is also in artifacts[%d]: one build per artifact", b.Name, b.Module, j)}
			}
		}
	}
	return m, nil
}

// checkNames checks every name of a mesh file by the one rule
// (events.CheckName), before anything is built or written: node names
// (each also a directory of the data directory), the modules each node
// runs and takes, its port names, and the modules and artifact names of
// artifacts and builds.
func checkNames(path string, m File) error {
	bad := func(field string, err error) error {
		return &fileError{file: path, field: field, msg: err.Error() + " (nothing was written)"}
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
