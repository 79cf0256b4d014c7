package commands

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"meshplane/declaration"
	"meshplane/events"
)

func TestModuleFileReadsProvidesAndReaches(t *testing.T) {
	src := `module: forge
provides:
  api: {port: forge, kind: tcp}
containers:
  - name: web
    image: forge:1
    reaches:
      - {module: mesh-store, service: store, env: STORE_ADDR}
      - {module: mesh-bus, service: bus, file: /run/mesh/bus.addr, node: novox}
`
	name, spec, err := ParseModuleFile("forge.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if name != "forge" {
		t.Errorf("name = %q", name)
	}
	if want := map[string]events.Provide{"api": {Port: "forge", Kind: "tcp"}}; !reflect.DeepEqual(spec.Provides, want) {
		t.Errorf("provides = %+v, want %+v", spec.Provides, want)
	}
	want := []events.Binding{
		{Module: "mesh-store", Service: "store", Env: "STORE_ADDR"},
		{Module: "mesh-bus", Service: "bus", File: "/run/mesh/bus.addr", Node: "novox"},
	}
	if got := spec.Containers[0].Reaches; !reflect.DeepEqual(got, want) {
		t.Errorf("reaches = %+v, want %+v", got, want)
	}
}

// Hostile or mistaken bindings are refused naming the line and field.
func TestModuleFileRefusesBadBindings(t *testing.T) {
	head := "module: forge\ncontainers:\n  - name: web\n    image: forge:1\n"
	for _, tc := range []struct {
		name, src, want string
	}{
		{"provides a list", "module: s\nprovides: [store]\n", "s.yaml:2: provides: want a mapping"},
		{"provides no kind", "module: s\nprovides:\n  store: {port: store}\n", "s.yaml:3: provides.store.kind: missing (want tcp, file, postgres, nats)"},
		{"provides a bad kind", "module: s\nprovides:\n  store: {port: store, kind: mysql}\n", `provides.store.kind: "mysql" is not a kind of service`},
		{"provides no port", "module: s\nprovides:\n  store: {kind: tcp}\n", "provides.store.port: missing"},
		{"provides an unknown field", "module: s\nprovides:\n  store: {port: a, kind: tcp, tls: true}\n", "provides.store.tls: unknown field (want port, kind)"},
		{"provides a bad service name", "module: s\nprovides:\n  \"st ore\": {port: a, kind: tcp}\n", `provides.st ore: "st ore"`},
		{"reaches an unknown field", head + "    reaches: [{module: s, service: st, env: A, url: x}]\n", "containers[0].reaches[0].url: unknown field (want module, service, env, file, node)"},
		{"reaches no module", head + "    reaches: [{service: st, env: A}]\n", "containers[0].reaches[0].module: missing"},
		{"reaches no service", head + "    reaches: [{module: s, env: A}]\n", "containers[0].reaches[0].service: missing"},
		{"reaches nowhere", head + "    reaches: [{module: s, service: st}]\n", "containers[0].reaches[0]: names neither env nor file"},
		{"reaches both", head + "    reaches: [{module: s, service: st, env: A, file: /a}]\n", "containers[0].reaches[0]: names both env and file"},
		{"reaches a bad variable", head + "    reaches: [{module: s, service: st, env: \"A=B\"}]\n", `containers[0].reaches[0].env: "A=B" is not a variable name`},
		{"reaches a relative file", head + "    reaches: [{module: s, service: st, file: run/a}]\n", `containers[0].reaches[0].file: "run/a" is not an absolute path`},
		{"reaches a variable set by env", head + "    env: {A: x}\n    reaches: [{module: s, service: st, env: A}]\n", "containers[0].reaches[0].env: A is also set by containers[0].env.A"},
		{"reaches a declared file", "module: forge\nfiles: [{path: /a, content: x}]\ncontainers:\n  - name: web\n    image: forge:1\n    reaches: [{module: s, service: st, file: /a}]\n", "containers[0].reaches[0].file: /a is declared twice"},
		{"reaches twice into one variable", head + "    reaches: [{module: s, service: st, env: A}, {module: t, service: st, env: A}]\n", "containers[0].reaches[1].env: A is also set by containers[0].reaches[0]"},
		{"reaches a bad node", head + "    reaches: [{module: s, service: st, env: A, node: \"no vox\"}]\n", "containers[0].reaches[0].node:"},
		{"reaches a mapping", head + "    reaches: {module: s}\n", "containers[0].reaches: want a list"},
		{"grants, not yet", head + "    grants: [{module: s, service: st, env: A}]\n", "containers[0].grants: grants are not supported yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := "forge.yaml"
			if strings.HasPrefix(tc.src, "module: s\n") {
				file = "s.yaml"
			}
			_, _, err := ParseModuleFile(file, []byte(tc.src))
			if !errors.Is(err, ErrModuleFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A spec that bypasses the module file (the API, an import) is checked
// alike by ValidateSpec.
func TestValidateSpecChecksBindings(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec events.ModuleSpec
		want string
	}{
		{"bad kind", events.ModuleSpec{Provides: map[string]events.Provide{"store": {Port: "pg", Kind: "x"}}}, "provides.store.kind"},
		{"no port", events.ModuleSpec{Provides: map[string]events.Provide{"store": {Kind: "tcp"}}}, "provides.store.port"},
		{"bad binding", events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "a:1",
			Reaches: []events.Binding{{Module: "s", Service: "st"}}}}}, "containers[0].reaches[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateSpec(tc.spec)
			var se *SpecError
			if !errors.As(err, &se) || se.Field != tc.want {
				t.Fatalf("ValidateSpec = %v, want a SpecError on %s", err, tc.want)
			}
		})
	}
}

// storeMesh is seed 004's mesh: mesh-store provides store on novox (its
// setting port.store), forge's container web on g14 reaches it.
func storeMesh() *fakeMesh {
	return newFakeMesh().apply(
		events.NodeRegistered{Node: "novox"},
		events.NodeRegistered{Node: "g14"},
		events.NodeSettingSet{Node: "novox", Key: events.SettingPrivateAddress, Value: "10.1.0.3"},
		events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "5432"},
		events.NodeSettingSet{Node: "g14", Key: events.SettingPrivateAddress, Value: "10.1.0.4"},
		events.ModuleDefined{Module: "mesh-store", Spec: events.ModuleSpec{
			Provides:   map[string]events.Provide{"store": {Port: "store", Kind: events.ProvideTCP}},
			Containers: []events.ContainerSpec{{Name: "store", Image: "postgres:15"}}}},
		events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{
			Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1",
				Reaches: []events.Binding{{Module: "mesh-store", Service: "store", Env: "STORE_ADDR"}}}}}},
		events.ModuleAssigned{Module: "mesh-store", Node: "novox"},
		events.ModuleAssigned{Module: "forge", Node: "g14"},
	)
}

func webOf(t *testing.T, c Composition) *declaration.Container {
	t.Helper()
	web, ok := c.Declaration.Resource("web")
	if !ok || web.Container == nil {
		t.Fatalf("no container web in %+v", c.Declaration.Resources)
	}
	return web.Container
}

// composeBoth composes node alone and through a prepared MeshCache, which
// must agree.
func composeBoth(t *testing.T, m *fakeMesh, node string) (Composition, error) {
	t.Helper()
	c, err := Compose(context.Background(), m, node, "corr")
	mc := NewMeshCache(m)
	mc.Prepare(context.Background())
	cc, cerr := Compose(context.Background(), mc.For(node), node, "corr")
	if (err == nil) != (cerr == nil) || (err != nil && err.Error() != cerr.Error()) {
		t.Fatalf("compose alone = %v, through a cache = %v", err, cerr)
	}
	if err == nil && c.Declaration.Digest != cc.Declaration.Digest {
		t.Fatalf("compose alone and through a cache differ:\n%+v\n%+v", c.Declaration, cc.Declaration)
	}
	return c, err
}

// Seed 004: a reach is ADDRESS:PORT of the provider's node, read at the
// consumer's compose; the provider's port moving moves every consumer's
// next declaration, and replaces the container (its env changed).
func TestComposeReachesTheProvidersAddress(t *testing.T) {
	m := storeMesh()
	before, err := composeBoth(t, m, "g14")
	if err != nil {
		t.Fatal(err)
	}
	if env := webOf(t, before).Env; !slices.Contains(env, "STORE_ADDR=10.1.0.3:5432") {
		t.Fatalf("env = %v, want STORE_ADDR=10.1.0.3:5432", env)
	}
	m.apply(events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"})
	after, err := composeBoth(t, m, "g14")
	if err != nil {
		t.Fatal(err)
	}
	if env := webOf(t, after).Env; !slices.Contains(env, "STORE_ADDR=10.1.0.3:6852") {
		t.Fatalf("after node set novox port.store 6852: env = %v, want STORE_ADDR=10.1.0.3:6852", env)
	}
	if before.Composed().Resources[0].Digest == after.Composed().Resources[0].Digest {
		t.Error("the container's digest did not change with the address it reaches")
	}
	// The provider's own node composes too (a reach of its own module).
	if _, err := composeBoth(t, m, "novox"); err != nil {
		t.Fatal(err)
	}
}

// Rule 6: a setting the provider's node was not given leaves the binding
// unfilled: the variable is not set, the declaration warns, never a
// literal or an empty value.
func TestComposeLeavesAnUnfilledReachUnsaidWithAWarning(t *testing.T) {
	for _, tc := range []struct {
		name, key, want string
	}{
		{"no port", "port.store", "which was not given port store (mesh node set novox port.store PORT): STORE_ADDR is not set"},
		{"no private address", events.SettingPrivateAddress, "which has no private address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := storeMesh().apply(events.NodeSettingSet{Node: "novox", Key: tc.key, Value: ""})
			c, err := composeBoth(t, m, "g14")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range webOf(t, c).Env {
				if strings.HasPrefix(e, "STORE_ADDR=") {
					t.Errorf("an unfilled binding was set: %s", e)
				}
			}
			if len(c.Declaration.Warnings) != 1 || !strings.Contains(c.Declaration.Warnings[0], tc.want) {
				t.Errorf("warnings = %q, want one containing %q", c.Declaration.Warnings, tc.want)
			}
		})
	}
}

// A binding that cannot be told is a statement about the consumer's node:
// it does not compose, naming the binding; never a silently empty value.
func TestComposeRefusesABindingItCannotTell(t *testing.T) {
	for _, tc := range []struct {
		name string
		more []events.Payload
		bind events.Binding
		want string
	}{
		{"assigned nowhere", []events.Payload{events.ModuleReleased{Module: "mesh-store", Node: "novox"}},
			events.Binding{Module: "mesh-store", Service: "store", Env: "STORE_ADDR"},
			"module forge's container web reaches store of module mesh-store, which is assigned to no node"},
		{"two nodes", []events.Payload{events.ModuleAssigned{Module: "mesh-store", Node: "g14"}},
			events.Binding{Module: "mesh-store", Service: "store", Env: "STORE_ADDR"},
			"which runs on g14, novox: say which with node:"},
		{"the wrong node", nil,
			events.Binding{Module: "mesh-store", Service: "store", Env: "STORE_ADDR", Node: "g14"},
			"on node g14, which does not run it (it runs on novox)"},
		{"no such service", nil,
			events.Binding{Module: "mesh-store", Service: "bus", Env: "STORE_ADDR"},
			"which provides no bus (it provides store)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := storeMesh().apply(tc.more...)
			m.apply(events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{
				Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1", Reaches: []events.Binding{tc.bind}}}}})
			_, err := composeBoth(t, m, "g14")
			if !errors.Is(err, ErrIncoherent) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("compose = %v, want ErrIncoherent containing %q", err, tc.want)
			}
		})
	}
	// node: says which of two.
	m := storeMesh().apply(events.ModuleAssigned{Module: "mesh-store", Node: "g14"},
		events.NodeSettingSet{Node: "g14", Key: "port.store", Value: "7000"},
		events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1",
			Reaches: []events.Binding{{Module: "mesh-store", Service: "store", Env: "STORE_ADDR", Node: "g14"}}}}}})
	c, err := composeBoth(t, m, "g14")
	if err != nil {
		t.Fatal(err)
	}
	if env := webOf(t, c).Env; !slices.Contains(env, "STORE_ADDR=10.1.0.4:7000") {
		t.Errorf("env = %v, want STORE_ADDR=10.1.0.4:7000", env)
	}
}

// Rule 1: a failed read of the provider's node aborts the consumer's
// compose naming that node and the read; nothing composed beside it.
func TestComposeFailsWhenTheProvidersNodeCannotBeRead(t *testing.T) {
	m := storeMesh()
	m.fail["node novox"] = errors.New("the database system is shutting down")
	c, err := Compose(context.Background(), m, "g14", "corr")
	var re *ReadError
	if !errors.As(err, &re) || errors.Is(err, ErrIncoherent) || !strings.Contains(err.Error(), "node novox") {
		t.Fatalf("compose = %v, want a *ReadError naming node novox", err)
	}
	if c.Declaration.Resources != nil {
		t.Errorf("resources came back beside the error: %+v", c.Declaration.Resources)
	}
	mc := NewMeshCache(m)
	mc.Prepare(context.Background())
	if _, err := Compose(context.Background(), mc.For("g14"), "g14", "corr"); !errors.As(err, &re) || !strings.Contains(err.Error(), "node novox") {
		t.Fatalf("compose through a cache = %v, want a *ReadError naming node novox", err)
	}
}

// A reach into a file is a file of the module (mode 0400, ADDRESS:PORT),
// mounted read-only into the container at its path.
func TestComposeReachesIntoAFile(t *testing.T) {
	m := storeMesh().apply(events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{
		Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1",
			Reaches: []events.Binding{{Module: "mesh-store", Service: "store", File: "/run/mesh/store.addr"}}}}}})
	c, err := composeBoth(t, m, "g14")
	if err != nil {
		t.Fatal(err)
	}
	f, ok := c.Declaration.Resource("/run/mesh/store.addr")
	if !ok || f.File == nil || f.File.Content != "10.1.0.3:5432\n" || f.File.Mode != 0o400 || f.Module != "forge" {
		t.Fatalf("file = %+v (ok %v), want forge's /run/mesh/store.addr 0400 holding 10.1.0.3:5432", f.File, ok)
	}
	if !slices.Contains(webOf(t, c).Mounts, declaration.Mount{Source: "/run/mesh/store.addr", Target: "/run/mesh/store.addr", ReadOnly: true}) {
		t.Errorf("mounts = %+v, want the file read-only", webOf(t, c).Mounts)
	}
}

// FuzzParseModuleFileBindings: whatever provides and reaches the module
// file accepts, define accepts, and the spec survives the event's JSON.
func FuzzParseModuleFileBindings(f *testing.F) {
	f.Add([]byte("module: s\nprovides:\n  store: {port: store, kind: postgres}\n  bus: {port: bus, kind: nats}\n"))
	f.Add([]byte("module: forge\ncontainers:\n  - name: web\n    image: forge:1\n    reaches:\n      - {module: mesh-store, service: store, env: STORE_ADDR}\n      - {module: b, service: bus, file: /run/mesh/b, node: novox}\n"))
	f.Add([]byte("module: forge\ncontainers:\n  - name: web\n    image: forge:1\n    grants: [{module: s, service: st, env: A}]\n"))
	f.Add([]byte("module: s\nprovides: {a: {port: a, kind: tcp}, a: {port: b, kind: file}}\n"))
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
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var back events.ModuleSpec
		if err := events.UnmarshalStrict(b, &back); err != nil {
			t.Fatalf("spec %s does not decode strictly: %v", b, err)
		}
		if !reflect.DeepEqual(back.Provides, spec.Provides) && len(spec.Provides) > 0 {
			t.Fatalf("provides changed through JSON: %+v → %+v", spec.Provides, back.Provides)
		}
	})
}

// why names the binding behind each value: the composed declaration
// carries it, and the event's stored form decodes it back.
func TestComposedNamesTheBindingBehindEachValue(t *testing.T) {
	m := storeMesh().apply(events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{
		Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1",
			Reaches: []events.Binding{
				{Module: "mesh-store", Service: "store", File: "/run/mesh/store.addr"},
				{Module: "mesh-store", Service: "store", Env: "STORE_ADDR"},
			}}}}})
	c, err := composeBoth(t, m, "g14")
	if err != nil {
		t.Fatal(err)
	}
	want := []events.Bound{
		{Container: "web", Field: "env.STORE_ADDR", Module: "mesh-store", Service: "store", Node: "novox", Setting: "port.store"},
		{Container: "web", Field: "file./run/mesh/store.addr", Module: "mesh-store", Service: "store", Node: "novox", Setting: "port.store"},
	}
	p := c.Stored()
	if !reflect.DeepEqual(p.Bindings, want) {
		t.Fatalf("bindings = %+v, want %+v", p.Bindings, want)
	}
	reg := events.NewRegistry()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second decode is the interned one
		back, err := reg.Decode(events.Event{Type: events.TypeDeclarationComposed, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if got := back.(events.DeclarationComposed).Bindings; !reflect.DeepEqual(got, want) {
			t.Fatalf("decode %d: bindings = %+v, want %+v", i, got, want)
		}
	}
	// An unfilled binding names nothing behind it.
	m.apply(events.NodeSettingSet{Node: "novox", Key: "port.store", Value: ""})
	if c, err = composeBoth(t, m, "g14"); err != nil || c.Composed().Bindings != nil {
		t.Fatalf("unfilled: bindings = %+v, err %v; want none", c.Composed().Bindings, err)
	}
}
