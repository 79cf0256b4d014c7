package commands

import (
	"errors"
	"strings"
	"testing"

	"meshplane/events"
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

// TestParseModuleFileUpgrade: a module's upgrade policy is manual unless
// its file says roll-out.
func TestParseModuleFileUpgrade(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"module: forge\n", events.UpgradeManual},
		{"module: forge\nupgrade: manual\n", events.UpgradeManual},
		{"module: forge\nupgrade: roll-out\n", events.UpgradeRollOut},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, spec, err := ParseModuleFile("f.yaml", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := (Module{Spec: spec}).Upgrade(); got != tc.want {
				t.Fatalf("upgrade %q, want %q", got, tc.want)
			}
		})
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
		{"unknown upgrade policy", "module: forge\nupgrade: yolo\n", "f.yaml:2: upgrade: \"yolo\" is not an upgrade policy (want manual, the default, or roll-out)"},
		{"syntax", "module: [forge\n", "f.yaml:"},
		{"bad route", "module: forge\nroutes: [\"not a host\"]\n", "f.yaml:2: routes[0]"},
		{"port read without env", "module: forge\ncontainers:\n  - name: web\n    image: a\n    ports: [{port: store}]\n", "f.yaml:5: containers[0].ports[0]"},
		{"path not clean", "module: forge\ndirectories:\n  - {path: /srv//data/., mode: \"0700\"}\n", `f.yaml:3: directories[0].path: "/srv//data/." is not a clean path: write "/srv/data"`},
		{"trailing slash", "module: forge\nfiles:\n  - {path: /etc/forge/}\n", `f.yaml:3: files[0].path: "/etc/forge/" is not a clean path`},
		{"dot-dot", "module: forge\ncontainers:\n  - name: web\n    image: a\n    mounts: [/srv/../etc]\n", `f.yaml:5: containers[0].mounts[0]: "/srv/../etc" is not a clean path`},
		{"mount target not clean", "module: forge\ncontainers:\n  - name: web\n    image: a\n    mounts:\n      - {source: /srv, target: /data/}\n", `f.yaml:6: containers[0].mounts[0].target: "/data/" is not a clean path`},
		{"directory twice", "module: forge\ndirectories:\n  - {path: /srv/data}\n  - {path: /srv/data, mode: \"0700\"}\n", "f.yaml:4: directories[1].path: /srv/data is declared twice: also directories[0].path"},
		{"a file and a directory", "module: forge\ndirectories:\n  - {path: /srv/data}\nfiles:\n  - {path: /srv/data, content: x}\n", "f.yaml:5: files[0].path: /srv/data is declared twice: also directories[0].path"},
		{"file twice", "module: forge\nfiles:\n  - {path: /etc/a}\n  - {path: /etc/a}\n", "f.yaml:4: files[1].path: /etc/a is declared twice: also files[0].path"},
		{"a mounted file", "module: forge\ncontainers:\n  - name: web\n    image: a\n    mounts:\n      - /etc/a\nfiles:\n  - {path: /etc/a}\n", "f.yaml:6: containers[0].mounts[0].source: /etc/a is declared as a file (files[0].path)"},
		{"two mounts at one target", "module: forge\ncontainers:\n  - name: web\n    image: a\n    mounts:\n      - {source: /srv/a, target: /data}\n      - {source: /srv/b, target: /data}\n", "f.yaml:7: containers[0].mounts[1]: mounts at /data, as mounts[0] does"},
		{"a long module name", "module: " + strings.Repeat("f", 5000) + "\n", `f.yaml:1: module: "ffffffffffffffffffffffffffffffffffffffff"… (5000 bytes)`},
		{"too big", "module: forge\n" + strings.Repeat("#", MaxModuleFileSize), "f.yaml: larger than 1048576 bytes"},
		{"two documents", "module: forge\n---\nmodule: photos\n", "f.yaml:2: a second YAML document: a module file defines one module"},
		{"a second document that does not parse", "module: forge\n---\n: :\n  x\n", "f.yaml:2: yaml:"},
		{"a module name with '_'", "module: my_forge\n", `f.yaml:1: module: "my_forge": byte 2 is '_'`},
		{"a module name with '.'", "module: forge.v2\n", `f.yaml:1: module: "forge.v2": byte 5 is '.'`},
		{"a container name with '.'", "module: forge\ncontainers:\n  - {name: web.a, image: a}\n", `f.yaml:3: containers[0].name: "web.a": byte 3 is '.'`},
		{"a container name ending in '-'", "module: forge\ncontainers:\n  - {name: web-, image: a}\n", `containers[0].name: "web-": a '-' at the start or the end`},
		{"a port name with '_'", "module: forge\ncontainers:\n  - name: web\n    image: a\n    ports: [{port: st_ore, env: P}]\n", `f.yaml:5: containers[0].ports[0].port: "st_ore": byte 2 is '_'`},
		{"an artifact segment with '_'", "module: forge\ncontainers:\n  - {name: web, artifact: forge/my_web}\n", `f.yaml:3: containers[0].artifact: artifact name "forge/my_web": segment "my_web": byte 2 is '_'`},
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

// An empty document after the module's (a trailing "---", a comment)
// defines nothing and is let by.
func TestParseModuleFileTrailingEmptyDocument(t *testing.T) {
	for _, file := range []string{"module: forge\n---\n", "module: forge\n---\n# nothing\n", "---\nmodule: forge\n...\n"} {
		if name, _, err := ParseModuleFile("f.yaml", []byte(file)); err != nil || name != "forge" {
			t.Errorf("%q: %q, %v", file, name, err)
		}
	}
}

// endless is an input that never ends (as /dev/zero), counting what is read.
type endless struct{ read int }

func (e *endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = '#'
	}
	e.read += len(b)
	return len(b), nil
}

func TestReadModuleFileIsBounded(t *testing.T) {
	r := &endless{}
	_, _, err := ReadModuleFile("zero", r)
	if !errors.Is(err, ErrModuleFile) || !strings.Contains(err.Error(), "zero: larger than") {
		t.Fatalf("err = %v, want a module file error naming the file and the limit", err)
	}
	if r.read > 2*MaxModuleFileSize {
		t.Fatalf("read %d bytes of an endless file; the limit is %d", r.read, MaxModuleFileSize)
	}
	name, _, err := ReadModuleFile("forge.yaml", strings.NewReader(forgeFile))
	if err != nil || name != "forge" {
		t.Fatalf("ReadModuleFile(forge) = %q, %v", name, err)
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
