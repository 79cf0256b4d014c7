package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseMeshFile(f *testing.F) {
	example, err := os.ReadFile("../../examples/mesh.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte("nodes:\n  - {name: a}\n  - {name: a}\n"))
	f.Add([]byte("nodes:\n  - {name: a, found: [/srv//x/.]}\n"))
	f.Add([]byte("nodes: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMeshFile("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, errMeshFile) {
				t.Fatalf("error not marked errMeshFile: %v", err)
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
		}
	})
}
