package meshup

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"meshplane/commands"
	"meshplane/events"
)

func FuzzParseMeshFile(f *testing.F) {
	example, err := os.ReadFile("../examples/mesh.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	local, err := os.ReadFile("../examples/local/mesh.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(local)
	f.Add([]byte("nodes:\n  - {name: a, runtime: podman}\nbuilds:\n  - {module: m, name: m/w}\n"))
	f.Add([]byte("nodes:\n  - {name: a}\n  - {name: a}\n"))
	f.Add([]byte("nodes:\n  - {name: a, found: [/srv//x/.]}\n"))
	f.Add([]byte("nodes: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseFile("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrMeshFile) {
				t.Fatalf("error not marked ErrMeshFile: %v", err)
			}
			return
		}
		// Whatever it accepts holds each node once, and only clean
		// absolute found paths.
		seen := map[string]bool{}
		for _, n := range m.Nodes {
			if seen[n.Name] {
				t.Fatalf("accepted node %q twice", n.Name)
			}
			seen[n.Name] = true
			for _, d := range n.Found {
				if !filepath.IsAbs(d) || filepath.Clean(d) != d {
					t.Fatalf("accepted found path %q", d)
				}
			}
			if n.Runtime != "" && n.Runtime != RuntimeSim && n.Runtime != RuntimeDocker {
				t.Fatalf("accepted runtime %q", n.Runtime)
			}
		}
		for _, b := range m.Builds {
			if b.Program == "" {
				t.Fatalf("accepted a build of no program: %+v", b)
			}
		}
		// And only names by the one rule.
		for _, n := range m.Nodes {
			for _, mod := range append(append([]string{}, n.Modules...), n.Take...) {
				if events.CheckName("module", mod) != nil {
					t.Fatalf("accepted module %q", mod)
				}
			}
			if events.CheckName("node", n.Name) != nil {
				t.Fatalf("accepted node %q", n.Name)
			}
		}
	})
}

// TestParseMeshFileNames: every name of a mesh file is held to the one
// rule (events.CheckName), naming the field and the rule broken.
func TestParseMeshFileNames(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"x..y", "nodes:\n  - {name: x..y}\n", `m.yaml: nodes[0].name: node name "x..y": byte 1 is '.'`},
		{"a node with '_'", "nodes:\n  - {name: a}\n  - {name: web_a}\n", `nodes[1].name: node name "web_a": byte 3 is '_'`},
		{"an empty node name", "nodes:\n  - {runtime: sim}\n", `nodes[0].name: node name "": empty`},
		{"a module", "nodes:\n  - {name: a, modules: [forge, Forge]}\n", `nodes[0].modules[1]: module name "Forge": byte 0 is 'F'`},
		{"a take", "nodes:\n  - {name: a, modules: [forge], take: [forge.v2]}\n", `nodes[0].take[0]: module name "forge.v2"`},
		{"a port", "nodes:\n  - {name: a, ports: {store: 1, my_port: 2}}\n", `nodes[0].ports.my_port: port name "my_port"`},
		{"an artifact's module", "nodes: []\nartifacts:\n  - {module: Bad Name/../x, name: x/w, digest: d}\n", `artifacts[0].module: module name "Bad Name/../x"`},
		{"an artifact's name", "nodes: []\nartifacts:\n  - {module: m, name: m/../w, digest: d}\n", `artifacts[0].name: artifact name "m/../w": segment ".."`},
		{"a build's name", "nodes: []\nbuilds:\n  - {module: m, name: m/W, program: p}\n", `builds[0].name: artifact name "m/W": segment "W"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFile("m.yaml", []byte(tc.yaml))
			if !errors.Is(err, ErrMeshFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrMeshFile saying %q", err, tc.want)
			}
		})
	}
}

// TestParseMeshFileLocal: what a mesh file says of this machine's nodes
// and the builds up makes, and what it refuses, naming the field.
func TestParseMeshFileLocal(t *testing.T) {
	tests := []struct {
		name, yaml string
		err        string // "" for accepted
	}{
		{"docker and a build", "nodes:\n  - {name: a, runtime: docker, artifact-store: 7481}\nbuilds:\n  - {module: m, name: m/w, program: meshplane/cmd/mesh-demo}\n", ""},
		{"sim said", "nodes:\n  - {name: a, runtime: sim}\n", ""},
		{"unknown runtime", "nodes:\n  - {name: a, runtime: podman}\n", `nodes[0].runtime: "podman": want sim or docker`},
		{"build of no program", "nodes: []\nbuilds:\n  - {module: m, name: m/w}\n", "builds[0].program: empty"},
		{"built and recorded", "nodes: []\nartifacts:\n  - {module: m, name: m/w, digest: \"sha256:ab\"}\nbuilds:\n  - {module: m, name: m/w, program: p}\n", "builds[0]: artifact \"m/w\" of module \"m\" is also in artifacts[0]"},
		{"unknown build field", "nodes: []\nbuilds:\n  - {module: m, name: m/w, program: p, tag: x}\n", "field tag not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFile("m.yaml", []byte(tt.yaml))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrMeshFile)):
				t.Fatalf("error %v, want ErrMeshFile saying %q", err, tt.err)
			}
		})
	}
}

// TestSetUpRecordsBuilds: the set-up records each build after the mesh
// file's artifacts, by module, name and the digest built, never an address.
func TestSetUpRecordsBuilds(t *testing.T) {
	mf, err := ParseFile("m.yaml", []byte("nodes: []\nartifacts:\n  - {module: f, name: f/web, digest: \"sha256:aa\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cs := SetUp(nil, mf, []commands.RecordArtifact{{Module: "h", Name: "h/web", Digest: "sha256:bb"}})
	want := []commands.Command{
		commands.RecordArtifact{Module: "f", Name: "f/web", Digest: "sha256:aa"},
		commands.RecordArtifact{Module: "h", Name: "h/web", Digest: "sha256:bb"},
	}
	if !reflect.DeepEqual(cs, want) {
		t.Errorf("set-up %+v, want %+v", cs, want)
	}
}
