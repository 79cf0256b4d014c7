package commands

import (
	"errors"
	"strings"
	"testing"
)

const forgeFile = `# the forge
module: forge
routes: [forge.zurag.be]
containers:
  - name: web
    artifact: forge/web
    env: {LOG: info}
    ports:
      - {port: store, env: STORE_PORT}
    mounts:
      - /var/lib/forge
      - {source: /srv/cfg, target: /etc/forge, readonly: true}
directories:
  - {path: /var/lib/forge, mode: "0700"}
files:
  - path: /etc/forge.conf
    content: |
      listen = 3000
`

func TestParseModuleFile(t *testing.T) {
	name, spec, err := ParseModuleFile("forge.yaml", []byte(forgeFile))
	if err != nil {
		t.Fatal(err)
	}
	if name != "forge" || len(spec.Containers) != 1 || spec.Containers[0].Artifact != "forge/web" {
		t.Fatalf("parsed %s %+v", name, spec)
	}
	c := spec.Containers[0]
	if c.Env["LOG"] != "info" || c.Ports[0].Env != "STORE_PORT" || len(c.Mounts) != 2 || !c.Mounts[1].ReadOnly {
		t.Fatalf("container %+v", c)
	}
	if spec.Directories[0].Mode != "0700" || spec.Files[0].Content != "listen = 3000\n" {
		t.Fatalf("directories %+v files %+v", spec.Directories, spec.Files)
	}
}

func TestParseModuleFileRefusesNamingFileLineAndField(t *testing.T) {
	tests := []struct {
		name, file string
		want       string // the whole error must contain this
	}{
		{"unknown field", "module: forge\ncontainers:\n  - name: web\n    imgae: x\n", "f.yaml:4: containers[0].imgae: unknown field"},
		{"no image", "module: forge\ncontainers:\n  - name: web\n", "f.yaml:3: containers[0]: container web names neither"},
		{"both", "module: forge\ncontainers:\n  - {name: web, image: a, artifact: b}\n", "f.yaml:3: containers[0]: container web names both"},
		{"relative mount", "module: forge\ncontainers:\n  - name: web\n    image: a\n    mounts: [data]\n", "f.yaml:5: containers[0].mounts[0]: \"data\" is not an absolute path"},
		{"wrong type", "module: forge\ncontainers: web\n", "f.yaml:2: containers: want a list"},
		{"bad mode", "module: forge\ndirectories:\n  - {path: /d, mode: \"0999\"}\n", "f.yaml:3: directories[0].mode"},
		{"no module name", "containers: []\n", "f.yaml:1: module: missing"},
		{"bad module name", "module: Forge\n", "f.yaml:1: module: \"Forge\""},
		{"duplicate container", "module: forge\ncontainers:\n  - {name: web, image: a}\n  - {name: web, image: b}\n", "containers[1].name: \"web\" is also the name of containers[0]"},
		{"key twice", "module: forge\nmodule: other\n", "f.yaml:2: module: given twice"},
		{"syntax", "module: [forge\n", "f.yaml:"},
		{"bad route", "module: forge\nroutes: [\"not a host\"]\n", "f.yaml:2: routes[0]"},
		{"port read without env", "module: forge\ncontainers:\n  - name: web\n    image: a\n    ports: [{port: store}]\n", "f.yaml:5: containers[0].ports[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseModuleFile("f.yaml", []byte(tt.file))
			if !errors.Is(err, ErrModuleFile) {
				t.Fatalf("err = %v, want ErrModuleFile", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func FuzzParseModuleFile(f *testing.F) {
	f.Add([]byte(forgeFile))
	f.Add([]byte("module: x\ncontainers: [{name: a, image: b, mounts: [/c]}]\n"))
	f.Add([]byte("module: &a x\nroutes: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name, spec, err := ParseModuleFile("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrModuleFile) {
				t.Fatalf("error not marked ErrModuleFile: %v", err)
			}
			return
		}
		// Whatever it accepts, the aggregate accepts too.
		if _, err := Decide(State{}, DefineModule{Module: name, Spec: spec}); err != nil {
			t.Fatalf("parsed %q but define refuses it: %v", data, err)
		}
	})
}
