package commands

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"meshplane/declaration"
	"meshplane/events"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseModuleFileUpdate: the update block with its defaults, each key
// set, and its refusals, each naming the file, line and field; a module
// without one has none, so an old definition is unchanged.
func TestParseModuleFileUpdate(t *testing.T) {
	def := events.DefaultUpdatePolicy()
	tests := []struct {
		name, file string
		want       *events.UpdatePolicy
		err        string
	}{
		{name: "no block", file: "module: forge\n", want: nil},
		{name: "an empty block: the defaults", file: "module: forge\nupdate: {}\n",
			want: &events.UpdatePolicy{Order: "stop-first", MinHealthyMS: 10_000, HealthyDeadlineMS: 300_000, OnFailure: "pause"}},
		{name: "every key", file: "module: forge\nupdate:\n  order: stop-first\n  min_healthy: 30s\n  healthy_deadline: 2m\n  on_failure: pause\n",
			want: &events.UpdatePolicy{Order: "stop-first", MinHealthyMS: 30_000, HealthyDeadlineMS: 120_000, OnFailure: "pause"}},
		{name: "one key", file: "module: forge\nupdate: {healthy_deadline: 1h}\n",
			want: &events.UpdatePolicy{Order: def.Order, MinHealthyMS: def.MinHealthyMS, HealthyDeadlineMS: 3_600_000, OnFailure: def.OnFailure}},
		{name: "an unknown key", file: "module: forge\nupdate:\n  order: stop-first\n  canary: 1\n", err: "f.yaml:4: update.canary: unknown field (want order, min_healthy, healthy_deadline, on_failure)"},
		{name: "not a duration", file: "module: forge\nupdate:\n  min_healthy: ten\n", err: `f.yaml:3: update.min_healthy: "ten" is not a duration`},
		{name: "a number, not a duration", file: "module: forge\nupdate: {healthy_deadline: 300}\n", err: `update.healthy_deadline: "300" is not a duration`},
		{name: "zero", file: "module: forge\nupdate: {min_healthy: 0s}\n", err: "f.yaml:2: update.min_healthy: 0s: want above 0"},
		{name: "over a day", file: "module: forge\nupdate: {healthy_deadline: 25h}\n", err: "update.healthy_deadline: 25h0m0s: want above 0 and at most 24h0m0s"},
		{name: "min_healthy not below the deadline", file: "module: forge\nupdate: {min_healthy: 5m, healthy_deadline: 5m}\n", err: "update.min_healthy: 5m0s is not below healthy_deadline 5m0s"},
		{name: "an unknown order", file: "module: forge\nupdate: {order: blue-green}\n", err: `update.order: "blue-green" is not an order (want stop-first or start-first)`},
		{name: "start-first", file: "module: forge\nupdate: {order: start-first}\n",
			want: &events.UpdatePolicy{Order: "start-first", MinHealthyMS: def.MinHealthyMS, HealthyDeadlineMS: def.HealthyDeadlineMS, OnFailure: def.OnFailure}},
		{name: "revert", file: "module: forge\nupdate: {on_failure: revert}\n",
			want: &events.UpdatePolicy{Order: def.Order, MinHealthyMS: def.MinHealthyMS, HealthyDeadlineMS: def.HealthyDeadlineMS, OnFailure: "revert"}},
		{name: "an unknown action", file: "module: forge\nupdate: {on_failure: retry}\n", err: `update.on_failure: "retry" is not a failure action`},
		{name: "not a mapping", file: "module: forge\nupdate: stop-first\n", err: "f.yaml:2: update"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, spec, err := ParseModuleFile("f.yaml", []byte(tt.file))
			if tt.err != "" {
				if !errors.Is(err, ErrModuleFile) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v\nwant one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(spec.Update, tt.want) {
				t.Fatalf("update %+v, want %+v", spec.Update, tt.want)
			}
		})
	}
}

// TestUpdateIsPartOfTheModule: a module's update block is in its
// definition: defining it again with another block is a change, with the
// same one none; a spec from the API is checked as the file's is.
func TestUpdateIsPartOfTheModule(t *testing.T) {
	parse := func(f string) events.ModuleSpec {
		t.Helper()
		_, s, err := ParseModuleFile("f.yaml", []byte(f))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := "module: forge\ncontainers: [{name: web, image: a}]\n"
	none, dflt, long := parse(base), parse(base+"update: {}\n"), parse(base+"update: {healthy_deadline: 10m}\n")
	// What DefineModule compares: the spec's digest.
	if declaration.Digest(none) == declaration.Digest(dflt) || declaration.Digest(dflt) == declaration.Digest(long) {
		t.Error("an update block, or a change of it, is not a change of the module's digest")
	}
	if declaration.Digest(dflt) != declaration.Digest(parse(base+"update:\n  order: stop-first\n  on_failure: pause\n")) {
		t.Error("the defaults written out differ from the defaults")
	}
	if declaration.Digest(none) != declaration.Digest(parse(base)) || strings.Contains(string(mustJSON(t, none)), "update") {
		t.Error("a module without a block does not keep its digest")
	}
	bad := none
	bad.Update = &events.UpdatePolicy{Order: events.UpdateStopFirst, OnFailure: events.UpdatePause}
	var se *SpecError
	if err := ValidateSpec(bad); !errors.As(err, &se) || se.Field != "update.min_healthy" {
		t.Errorf("a block without its durations from the API: %v", err)
	}
}

// TestComposeRollout: a module's update block reaches each of its
// containers as the agent acts on it; a module without one composes as
// before; start-first where the new container would collide with the old
// one on the node (a published port, the node's network) does not compose,
// saying why.
func TestComposeRollout(t *testing.T) {
	start := &events.UpdatePolicy{Order: events.UpdateStartFirst, MinHealthyMS: 2_000, HealthyDeadlineMS: 60_000, OnFailure: events.UpdatePause}
	plain := events.ContainerSpec{Name: "web", Image: "forge:1"}
	tests := []struct {
		name   string
		c      events.ContainerSpec
		update *events.UpdatePolicy
		want   *declaration.Rollout
		err    string
	}{
		{name: "no block", c: plain},
		{name: "start-first", c: plain, update: start,
			want: &declaration.Rollout{Order: "start-first", MinHealthy: 2 * time.Second, HealthyDeadline: time.Minute}},
		{name: "stop-first publishing", c: events.ContainerSpec{Name: "web", Image: "forge:1", Publish: []events.Publish{{Port: "http", Container: 8080}}},
			update: &events.UpdatePolicy{Order: events.UpdateStopFirst, MinHealthyMS: 10_000, HealthyDeadlineMS: 300_000, OnFailure: events.UpdatePause},
			want:   &declaration.Rollout{Order: "stop-first", MinHealthy: 10 * time.Second, HealthyDeadline: 5 * time.Minute}},
		{name: "start-first publishing", c: events.ContainerSpec{Name: "web", Image: "forge:1", Publish: []events.Publish{{Port: "http", Container: 8080}}}, update: start,
			err: "module forge's container web rolls out start-first and publishes host port 8443, which the old container holds while the new one starts on node novox"},
		{name: "start-first in the node's network", c: events.ContainerSpec{Name: "web", Image: "forge:1", Network: "host"}, update: start,
			err: "module forge's container web rolls out start-first and runs in the node's network (network: host)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFakeMesh().apply(events.NodeRegistered{Node: "novox"},
				events.NodeSettingSet{Node: "novox", Key: events.SettingPrivateAddress, Value: "10.1.0.3"},
				events.NodeSettingSet{Node: "novox", Key: "port.http", Value: "8443"},
				events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{tt.c}, Update: tt.update}},
				events.ModuleAssigned{Module: "forge", Node: "novox"})
			c, err := Compose(context.Background(), m, "novox", "")
			if tt.err != "" {
				var ie *IncoherentError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v\nwant an IncoherentError containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			web, _ := c.Declaration.Resource("web")
			if !reflect.DeepEqual(web.Container.Rollout, tt.want) {
				t.Fatalf("rollout %+v, want %+v", web.Container.Rollout, tt.want)
			}
		})
	}
}
