package commands

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"meshplane/declaration"
	"meshplane/events"
)

const optionsFile = `module: forge
containers:
  - name: db
    image: postgres:16
    volumes:
      - pgdata:/var/lib/postgresql/data
      - /srv/pg-init:/docker-entrypoint-initdb.d:ro
      - {type: volume, source: pgrun, target: /run/pg, read_only: false}
    healthcheck:
      test: [CMD-SHELL, "pg_isready -U forge"]
      interval: 10s
      timeout: 5s
      retries: 5
      start_period: 30s
    restart: always
    stop_grace_period: 1m30s
    memory: 512m
    cpus: "0.5"
    user: "999:999"
    cap_add: [SYS_NICE]
    tmpfs: [/tmp]
    read_only: true
  - name: web
    image: forge:1
    entrypoint: [/bin/forge]
    publish:
      - {port: http, container: 8080}
      - {port: ssh, container: 22, on: all}
    healthcheck:
      test: curl -f http://localhost:8080/
    depends_on:
      db: {condition: service_healthy}
  - name: cron
    image: forge:1
    network: host
    restart: on-failure
    depends_on: [db, web]
`

func TestParseModuleFileContainerOptions(t *testing.T) {
	_, spec, err := ParseModuleFile("f.yaml", []byte(optionsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []events.ContainerSpec{
		{Name: "db", Image: "postgres:16",
			Mounts: []events.Mount{
				{Source: "pgdata", Target: "/var/lib/postgresql/data", Volume: true},
				{Source: "/srv/pg-init", Target: "/docker-entrypoint-initdb.d", ReadOnly: true},
				{Source: "pgrun", Target: "/run/pg", Volume: true},
			},
			Healthcheck: &events.Healthcheck{Test: []string{"CMD-SHELL", "pg_isready -U forge"}, Interval: "10s", Timeout: "5s", Retries: 5, StartPeriod: "30s"},
			Restart:     "always", StopGracePeriod: "1m30s", Memory: "512m", CPUs: "0.5", User: "999:999",
			CapAdd: []string{"SYS_NICE"}, Tmpfs: []string{"/tmp"}, ReadOnly: true},
		{Name: "web", Image: "forge:1", Entrypoint: []string{"/bin/forge"},
			Publish:     []events.Publish{{Port: "http", Container: 8080}, {Port: "ssh", Container: 22, On: "all"}},
			Healthcheck: &events.Healthcheck{Test: []string{"CMD-SHELL", "curl -f http://localhost:8080/"}},
			DependsOn:   []events.Dependency{{Container: "db", Condition: "service_healthy"}}},
		{Name: "cron", Image: "forge:1", Network: "host", Restart: "on-failure",
			DependsOn: []events.Dependency{{Container: "db"}, {Container: "web"}}},
	}
	if !reflect.DeepEqual(spec.Containers, want) {
		t.Fatalf("containers\n got %+v\nwant %+v", spec.Containers, want)
	}
}

func TestParseModuleFileRefusesOptions(t *testing.T) {
	c := "module: forge\ncontainers:\n  - name: web\n    image: a\n"
	tests := []struct{ name, file, want string }{
		{"healthcheck without test", c + "    healthcheck: {interval: 5s}\n", "f.yaml:5: containers[0].healthcheck.test: missing"},
		{"healthcheck unknown key", c + "    healthcheck: {test: [NONE], every: 5s}\n", "containers[0].healthcheck.every: unknown field (want test, interval, timeout, retries, start_period)"},
		{"healthcheck bad test", c + "    healthcheck: {test: [RUN, x]}\n", `containers[0].healthcheck.test: "RUN": a test starts with CMD, CMD-SHELL or NONE`},
		{"healthcheck CMD alone", c + "    healthcheck: {test: [CMD]}\n", "containers[0].healthcheck.test: [CMD] names the program"},
		{"healthcheck NONE with interval", c + "    healthcheck: {test: [NONE], interval: 5s}\n", "containers[0].healthcheck: test [NONE] disables"},
		{"healthcheck bad interval", c + "    healthcheck: {test: [CMD, true], interval: often}\n", `containers[0].healthcheck.interval: "often" is not a duration`},
		{"healthcheck bad retries", c + "    healthcheck: {test: [CMD, true], retries: -1}\n", `containers[0].healthcheck.retries: "-1" is not a whole number`},
		{"network bridge", c + "    network: bridge\n", `containers[0].network: "bridge" is not a network mode`},
		{"host network and networks", c + "    network: host\n    networks: [back]\n", "containers[0].network: network: host uses the node's network, and joins no networks (back)"},
		{"host network and publish", c + "    network: host\n    publish: [{port: http, container: 80}]\n", "containers[0].network: network: host listens on the node's addresses itself"},
		{"publish without container", c + "    publish: [{port: http}]\n", "f.yaml:5: containers[0].publish[0]: a publish names both port"},
		{"publish unknown key", c + "    publish: [{port: http, container: 80, host: 1}]\n", "containers[0].publish[0].host: unknown field (want port, container, on)"},
		{"publish bad port", c + "    publish: [{port: http, container: 70000}]\n", "containers[0].publish[0].container: 70000 is not a port"},
		{"publish bad on", c + "    publish: [{port: http, container: 80, on: public}]\n", `containers[0].publish[0].on: "public" is not where to publish`},
		{"publish twice", c + "    publish: [{port: http, container: 80}, {port: alt, container: 80}]\n", "containers[0].publish[1].container: port 80 is published twice: also publish[0]"},
		{"publish a port name with '_'", c + "    publish: [{port: my_http, container: 80}]\n", `containers[0].publish[0].port: "my_http": byte 2 is '_'`},
		{"restart unknown", c + "    restart: sometimes\n", `containers[0].restart: "sometimes" is not a restart policy (want always, on-failure, no, unless-stopped)`},
		{"stop grace negative", c + "    stop_grace_period: -5s\n", `containers[0].stop_grace_period: "-5s" is not a duration`},
		{"memory bad", c + "    memory: lots\n", `containers[0].memory: "lots" is not a size`},
		{"memory too little", c + "    memory: 1k\n", `containers[0].memory: "1k" is below the engine's least limit, 6m`},
		{"cpus bad", c + "    cpus: -1\n", `containers[0].cpus: "-1" is not a number of CPUs`},
		{"cpus NaN", c + "    cpus: NaN\n", `containers[0].cpus: "NaN" is not a number of CPUs`},
		{"user with a space", c + "    user: \"a b\"\n", `containers[0].user: "a b" is not a user`},
		{"cap_add lower case", c + "    cap_add: [net_admin]\n", `containers[0].cap_add[0]: "net_admin" is not a capability`},
		{"tmpfs relative", c + "    tmpfs: [tmp]\n", `containers[0].tmpfs[0]: "tmp" is not an absolute path`},
		{"tmpfs over a mount", c + "    mounts: [/data]\n    tmpfs: /data\n", "containers[0].tmpfs[0]: /data is mounted twice: also mounts[0]"},
		{"read_only not a bool", c + "    read_only: maybe\n", `containers[0].read_only: "maybe" is not true or false`},
		{"depends on a stranger", c + "    depends_on: [db]\n", `containers[0].depends_on[0]: "db" is not a container of this module`},
		{"depends on itself", c + "    depends_on: [web]\n", "containers[0].depends_on[0]: container web depends on itself"},
		{"depends_on condition", "module: forge\ncontainers:\n  - name: web\n    image: a\n    depends_on: {db: {condition: service_ready}}\n  - {name: db, image: b}\n", `containers[0].depends_on[0].condition: "service_ready" is not a condition`},
		{"depends_on unknown key", "module: forge\ncontainers:\n  - name: web\n    image: a\n    depends_on: {db: {required: true}}\n  - {name: db, image: b}\n", "containers[0].depends_on.db.required: unknown field (want condition)"},
		{"depends_on cycle", "module: forge\ncontainers:\n  - {name: a, image: x, depends_on: [b]}\n  - {name: b, image: x, depends_on: [a]}\n", "containers: depends_on goes round: a → b → a"},
		{"volume short form bad", c + "    volumes: [data]\n", `containers[0].volumes[0]: "data" is not SOURCE:TARGET[:ro]`},
		{"volume bad mode", c + "    volumes: [\"data:/d:rx\"]\n", `containers[0].volumes[0]: "data:/d:rx": the mode is ro or rw`},
		{"volume bad name", c + "    volumes: [\"Data:/d\"]\n", `containers[0].mounts[0].source: "Data"`},
		{"volume relative target", c + "    volumes: [\"data:d\"]\n", `containers[0].mounts[0].target: "d" is not an absolute path`},
		{"volume bad type", c + "    volumes: [{type: tmpfs, source: a, target: /a}]\n", `containers[0].volumes[0].type: "tmpfs" is not a volume type`},
		{"volume and mount at one target", c + "    mounts: [{source: /srv, target: /d}]\n    volumes: [\"data:/d\"]\n", "containers[0].mounts[1]: mounts at /d, as mounts[0] does"},
		{"still strict", c + "    privileged: true\n", "containers[0].privileged: unknown field (want name, image, artifact"},
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

// TestComposeContainerOptions: a container's options reach its declared
// spec, resolved at compose time: durations, sizes and CPUs as the engine
// takes them, a publish's host port from the node's setting, at its private
// address unless on: all.
func TestComposeContainerOptions(t *testing.T) {
	_, spec, err := ParseModuleFile("f.yaml", []byte(optionsFile))
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeMesh().apply(events.NodeRegistered{Node: "novox"},
		events.NodeSettingSet{Node: "novox", Key: events.SettingPrivateAddress, Value: "10.1.0.3"},
		events.NodeSettingSet{Node: "novox", Key: "port.http", Value: "8443"},
		events.NodeSettingSet{Node: "novox", Key: "port.ssh", Value: "2222"},
		events.ModuleDefined{Module: "forge", Spec: spec}, events.ModuleAssigned{Module: "forge", Node: "novox"})
	c, err := Compose(context.Background(), m, "novox", "")
	if err != nil {
		t.Fatal(err)
	}
	db, _ := c.Declaration.Resource("db")
	wantDB := declaration.Container{Image: "postgres:16",
		Mounts: []declaration.Mount{
			{Source: "/srv/pg-init", Target: "/docker-entrypoint-initdb.d", ReadOnly: true},
			{Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true},
			{Source: "pgrun", Target: "/run/pg", Volume: true},
			{Source: "pgdata", Target: "/var/lib/postgresql/data", Volume: true},
		},
		Healthcheck: &declaration.Healthcheck{Test: []string{"CMD-SHELL", "pg_isready -U forge"}, Interval: 10 * time.Second, Timeout: 5 * time.Second, Retries: 5, StartPeriod: 30 * time.Second},
		Restart:     "always", StopGracePeriod: 90 * time.Second, Memory: 512 << 20, NanoCPUs: 500_000_000, User: "999:999",
		CapAdd: []string{"SYS_NICE"}, Tmpfs: []string{"/tmp"}, ReadOnly: true}
	if !reflect.DeepEqual(*db.Container, wantDB) {
		t.Errorf("db\n got %+v\nwant %+v", *db.Container, wantDB)
	}
	web, _ := c.Declaration.Resource("web")
	wantPub := []declaration.Published{{HostIP: "10.1.0.3", HostPort: 8443, ContainerPort: 8080}, {HostPort: 2222, ContainerPort: 22}}
	if !reflect.DeepEqual(web.Container.Publish, wantPub) || !reflect.DeepEqual(web.Container.DependsOn, []declaration.Dependency{{Container: "db", Condition: "service_healthy"}}) {
		t.Errorf("web %+v", *web.Container)
	}
	cron, _ := c.Declaration.Resource("cron")
	if cron.Container.NetworkMode != "host" || !reflect.DeepEqual(cron.Container.DependsOn, []declaration.Dependency{{Container: "db", Condition: "service_started"}, {Container: "web", Condition: "service_started"}}) {
		t.Errorf("cron %+v", *cron.Container)
	}
	// A named volume is the engine's: no directory resource for it.
	for _, r := range c.Declaration.Resources {
		if r.Kind == declaration.KindDirectory && !strings.HasPrefix(r.Name, "/") {
			t.Errorf("a volume became a directory: %+v", r)
		}
	}
	if _, ok := c.Declaration.Resource("/srv/pg-init"); !ok {
		t.Errorf("a host directory of volumes: is not a directory resource")
	}
}

// TestComposePublishRefusals: a publish that reaches nothing, or that two
// containers of one node make of one host port, fails the compose naming
// what is wrong (rule 1), never a port silently dropped.
func TestComposePublishRefusals(t *testing.T) {
	web := events.ContainerSpec{Name: "web", Image: "forge:1", Publish: []events.Publish{{Port: "http", Container: 8080}}}
	other := events.ContainerSpec{Name: "wiki", Image: "wiki:1", Publish: []events.Publish{{Port: "wiki", Container: 80, On: "all"}}}
	tests := []struct {
		name     string
		settings map[string]string
		mods     map[string][]events.ContainerSpec
		want     string
	}{
		{"a setting the node lacks", map[string]string{events.SettingPrivateAddress: "10.1.0.3"},
			map[string][]events.ContainerSpec{"forge": {web}},
			`module forge's container web publishes port "http" of node novox, which was not given`},
		{"no private address", map[string]string{"port.http": "8443"},
			map[string][]events.ContainerSpec{"forge": {web}},
			`publishes port "http" on the private address of node novox, which has none yet`},
		{"not a port", map[string]string{events.SettingPrivateAddress: "10.1.0.3", "port.http": "http"},
			map[string][]events.ContainerSpec{"forge": {web}},
			`whose value "http" is not a port`},
		{"one host port twice", map[string]string{events.SettingPrivateAddress: "10.1.0.3", "port.http": "8443", "port.wiki": "8443"},
			map[string][]events.ContainerSpec{"forge": {web}, "wiki": {other}},
			"module forge's container web and module wiki's container wiki both publish port 8443 of node novox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := []events.Payload{events.NodeRegistered{Node: "novox"}}
			for k, v := range tt.settings {
				evs = append(evs, events.NodeSettingSet{Node: "novox", Key: k, Value: v})
			}
			for mod, cs := range tt.mods {
				evs = append(evs, events.ModuleDefined{Module: mod, Spec: events.ModuleSpec{Containers: cs}}, events.ModuleAssigned{Module: mod, Node: "novox"})
			}
			_, err := Compose(context.Background(), newFakeMesh().apply(evs...), "novox", "")
			var ie *IncoherentError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant an IncoherentError containing %q", err, tt.want)
			}
		})
	}
}

// FuzzParseContainerOptions: whatever the module file's options decode to is
// accepted by define, and composes or fails as incoherent, never a panic.
func FuzzParseContainerOptions(f *testing.F) {
	f.Add([]byte(optionsFile))
	f.Add([]byte("module: x\ncontainers: [{name: a, image: b, publish: [{port: p, container: 1}], healthcheck: {test: [NONE]}}]\n"))
	f.Add([]byte("module: x\ncontainers: [{name: a, image: b, memory: 1.5g, cpus: '2', volumes: ['v:/v:ro']}]\n"))
	f.Add([]byte("module: x\ncontainers: [{name: a, image: b, depends_on: {c: {condition: service_healthy}}}, {name: c, image: d}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name, spec, err := ParseModuleFile("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrModuleFile) {
				t.Fatalf("error not marked ErrModuleFile: %v", err)
			}
			return
		}
		if _, err := Decide(State{}, DefineModule{Module: name, Spec: spec}); err != nil {
			t.Fatalf("parsed %q but define refuses it: %v", data, err)
		}
		m := newFakeMesh().apply(events.NodeRegistered{Node: "n"},
			events.NodeSettingSet{Node: "n", Key: events.SettingPrivateAddress, Value: "10.0.0.1"},
			events.NodeSettingSet{Node: "n", Key: "port.p", Value: "80"},
			events.ModuleDefined{Module: name, Spec: spec}, events.ModuleAssigned{Module: name, Node: "n"})
		if _, err := Compose(context.Background(), m, "n", ""); err != nil {
			var ie *IncoherentError
			if !errors.As(err, &ie) {
				t.Fatalf("compose of %q: %v, want an IncoherentError or nothing", data, err)
			}
		}
	})
}

// TestDocsModuleFilesParse: every whole module file the docs show (a yaml
// block starting with "module:") is one ParseModuleFile accepts.
func TestDocsModuleFilesParse(t *testing.T) {
	n := 0
	for _, doc := range []string{"../docs/module-format.md", "../docs/operations.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(b), "```yaml\n")[1:] {
			block, _, _ := strings.Cut(part, "```")
			if !strings.HasPrefix(strings.TrimLeft(block, "# \n"), "module:") && !strings.Contains(block, "\nmodule:") {
				continue
			}
			n++
			if _, _, err := ParseModuleFile(doc, []byte(block)); err != nil {
				t.Errorf("%s shows a module file that does not parse: %v\n%s", doc, err, block)
			}
		}
	}
	if n < 3 {
		t.Fatalf("read %d module files from the docs, want the examples (at least 3)", n)
	}
}

// TestOptionsRoundTripStrictly: a definition holding every option, and the
// declaration composed from it, decode back strictly (the import door, an
// export read back) to what was written.
func TestOptionsRoundTripStrictly(t *testing.T) {
	_, spec, err := ParseModuleFile("f.yaml", []byte(optionsFile))
	if err != nil {
		t.Fatal(err)
	}
	def := events.ModuleDefined{Module: "forge", Spec: spec}
	b, _ := json.Marshal(def)
	var back events.ModuleDefined
	if err := events.UnmarshalStrict(b, &back); err != nil || !reflect.DeepEqual(back, def) {
		t.Fatalf("module.defined back: %+v, %v", back, err)
	}
	m := newFakeMesh().apply(events.NodeRegistered{Node: "novox"},
		events.NodeSettingSet{Node: "novox", Key: events.SettingPrivateAddress, Value: "10.1.0.3"},
		events.NodeSettingSet{Node: "novox", Key: "port.http", Value: "8443"},
		events.NodeSettingSet{Node: "novox", Key: "port.ssh", Value: "2222"},
		def, events.ModuleAssigned{Module: "forge", Node: "novox"})
	c, err := Compose(context.Background(), m, "novox", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(c.Declaration)
	var d declaration.Declaration
	if err := events.UnmarshalStrict(b, &d); err != nil || declaration.Digest(d) != declaration.Digest(c.Declaration) {
		t.Fatalf("declaration back: %v", err)
	}
}
