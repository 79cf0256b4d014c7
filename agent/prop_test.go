package agent_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
	"meshplane/events"
)

// Property tests of the agent's diff (Diff, then Apply carrying the plan
// out), on drawn declarations and drawn node states that a table cannot
// enumerate. rapid shrinks a failure to a small declaration and state, and
// -rapid.checks=N runs more cases (default 100).

// drawDecl draws a declaration of up to 4 modules, each with directories
// (under /d), files (under /f, so no file is where a directory is
// declared) and containers that mount some of the directories.
func drawDecl(t *rapid.T, id string) declaration.Declaration {
	dirModes := []uint32{0, 0o700, 0o750, 0o755, 0o2770}
	fileModes := []uint32{0, 0o600, 0o640, 0o700}
	commands := [][]string{nil, {"serve"}, {"serve", "--debug"}}
	var rs []declaration.Resource
	var taken []string
	for m := range rapid.IntRange(1, 4).Draw(t, "modules") {
		module := fmt.Sprintf("mod%d", m)
		if rapid.Bool().Draw(t, module+" taken") {
			taken = append(taken, module)
		}
		var dirs []string
		for i := range rapid.IntRange(0, 2).Draw(t, module+" directories") {
			p := fmt.Sprintf("/d/%s/%d", module, i)
			dirs = append(dirs, p)
			rs = append(rs, dir(fmt.Sprintf("%s-dir%d", module, i), module, p, rapid.SampledFrom(dirModes).Draw(t, "directory mode")))
		}
		for i := range rapid.IntRange(0, 1).Draw(t, module+" files") {
			content := fmt.Sprintf("v=%d\n", rapid.IntRange(0, 2).Draw(t, "file content"))
			rs = append(rs, file(fmt.Sprintf("%s-file%d", module, i), module, fmt.Sprintf("/f/%s/%d.conf", module, i), content, rapid.SampledFrom(fileModes).Draw(t, "file mode")))
		}
		for i := range rapid.IntRange(0, 3).Draw(t, module+" containers") {
			rs = append(rs, ctr(fmt.Sprintf("%s-c%d", module, i), module, drawContainer(t, i, dirs, commands)))
		}
	}
	d := decl(id, rs...)
	if rapid.Bool().Draw(t, "adopted") {
		d = adopted(d, taken...)
	}
	d.Hosts = fmt.Sprintf("10.1.0.%d name\n", rapid.IntRange(0, 2).Draw(t, "hosts"))
	return d
}

func drawContainer(t *rapid.T, i int, dirs []string, commands [][]string) declaration.Container {
	c := declaration.Container{
		Image:   fmt.Sprintf("img%d:%d", i, rapid.IntRange(0, 2).Draw(t, "image tag")),
		Command: rapid.SampledFrom(commands).Draw(t, "command"),
	}
	for k := range rapid.IntRange(0, 2).Draw(t, "env") {
		c.Env = append(c.Env, fmt.Sprintf("K%d=%d", k, rapid.IntRange(0, 2).Draw(t, "env value")))
	}
	for k, p := range dirs {
		if rapid.Bool().Draw(t, "mount "+p) {
			c.Mounts = append(c.Mounts, declaration.Mount{Source: p, Target: fmt.Sprintf("/m%d", k)})
		}
	}
	c.Mounts = append(c.Mounts, declaration.Mount{Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true})
	return c
}

// propFixture is newFixture for a property: an agent for novox over an
// empty simulated runtime and an outbox in memory.
func propFixture(t rapid.TB) *fixture {
	t.Helper()
	fx := &fixture{rt: simruntime.New(), box: agent.NewMemOutbox(), sink: &sink{}}
	tick := 0
	ag, err := agent.New(agent.Config{
		Node: "novox", Runtime: fx.rt, Outbox: fx.box, Deliver: fx.sink.deliver,
		Now:   func() time.Time { tick++; return epoch.Add(time.Duration(tick) * time.Minute) },
		NewID: ids(),
	})
	if err != nil {
		t.Fatalf("new agent: %v", err)
	}
	fx.ag = ag
	return fx
}

func propApply(t rapid.TB, fx *fixture, d declaration.Declaration) agent.Report {
	t.Helper()
	r, err := fx.ag.Apply(context.Background(), d)
	if err != nil {
		t.Fatalf("apply %s: %v", d.ID, err)
	}
	return r
}

// drawNodeState puts on fx's node what a node may hold before it applies
// d: nothing, d itself or another declaration applied, then what something
// outside the mesh did (directories and files made or changed, containers
// stopped, stale managed containers, unmanaged ones, a hosts file of its
// own). It returns the names of the unmanaged containers.
func drawNodeState(t *rapid.T, fx *fixture, d declaration.Declaration) []string {
	ctx := context.Background()
	switch rapid.SampledFrom([]string{"nothing", "the same", "another"}).Draw(t, "applied before") {
	case "the same":
		d.ID = "novox/0"
		propApply(t, fx, d)
	case "another":
		propApply(t, fx, drawDecl(t, "novox/0"))
	}
	for range rapid.IntRange(0, 3).Draw(t, "directories made outside") {
		p := fmt.Sprintf("/d/mod%d/%d", rapid.IntRange(0, 3).Draw(t, "module"), rapid.IntRange(0, 2).Draw(t, "index"))
		mode := rapid.SampledFrom([]uint32{0o700, 0o755, 0o777}).Draw(t, "mode")
		if fx.rt.MakeDirectory(p, mode) != nil {
			_ = fx.rt.Chmod(ctx, p, mode) // there already: its mode changed instead
		}
	}
	for range rapid.IntRange(0, 2).Draw(t, "files written outside") {
		p := fmt.Sprintf("/f/mod%d/0.conf", rapid.IntRange(0, 3).Draw(t, "module"))
		content := fmt.Sprintf("v=%d\n", rapid.IntRange(0, 3).Draw(t, "content"))
		if err := fx.rt.WriteFile(ctx, p, []byte(content), rapid.SampledFrom([]uint32{0o600, 0o644, 0o666}).Draw(t, "mode")); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
	if names := managed(t, fx.rt); len(names) > 0 {
		for range rapid.IntRange(0, 2).Draw(t, "containers stopped outside") {
			_ = fx.rt.StopContainer(rapid.SampledFrom(names).Draw(t, "stopped"))
		}
	}
	for i := range rapid.IntRange(0, 1).Draw(t, "stale managed containers") {
		name := fmt.Sprintf("mod%d-c%d", rapid.IntRange(0, 4).Draw(t, "module"), i)
		c := agent.Container{Name: name, Module: "stale", Digest: "sha256:stale", Spec: declaration.Container{Image: "stale:1"}}
		_ = fx.rt.CreateContainer(ctx, c) // a name already taken keeps its container
	}
	var unmanaged []string
	for i := range rapid.IntRange(0, 1).Draw(t, "unmanaged containers") {
		name := fmt.Sprintf("manual-%d", i)
		if err := fx.rt.RunUnmanaged(name, "busybox:1"); err != nil {
			t.Fatalf("run unmanaged: %v", err)
		}
		unmanaged = append(unmanaged, name)
	}
	if rapid.Bool().Draw(t, "hosts file of its own") {
		if err := fx.rt.WriteFile(ctx, declaration.HostsPath, []byte("127.0.0.1 localhost\n"), rapid.SampledFrom([]uint32{0o600, 0o644}).Draw(t, "hosts mode")); err != nil {
			t.Fatalf("write hosts: %v", err)
		}
	}
	return unmanaged
}

func managed(t rapid.TB, rt *simruntime.Runtime) []string {
	t.Helper()
	cs, err := rt.ListContainers(context.Background())
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

func containersByName(t rapid.TB, rt *simruntime.Runtime) map[string]agent.Container {
	t.Helper()
	cs, err := rt.ListContainers(context.Background())
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	out := make(map[string]agent.Container, len(cs))
	for _, c := range cs {
		out[c.Name] = c
	}
	return out
}

// pathOf is the path a directory or file resource declares.
func pathOf(r declaration.Resource) string {
	switch {
	case r.Directory != nil:
		return r.Directory.Path
	case r.File != nil:
		return r.File.Path
	}
	return ""
}

// Property: whatever the node holds, carrying out the plan Diff makes from
// what Observe saw yields the declaration. Every declared resource the plan
// does not hold is then exactly as declared (a container with its spec,
// module and digest, running; a directory at its mode; a file with its
// content and mode), the hosts file is the declaration's, no managed
// container the declaration lacks is left, an unmanaged one is never
// touched, a held resource is as it was, and a step the plan found
// unchanged was not redone. Then the plan is a fixpoint: Diff on what the
// node now holds changes nothing.
func TestApplyingThePlanYieldsTheDeclarationProperty(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		fx := propFixture(t)
		d := drawDecl(t, "novox/1")
		unmanaged := drawNodeState(t, fx, d)

		obs, err := agent.Observe(ctx, fx.rt, d)
		if err != nil {
			t.Fatalf("observe: %v", err)
		}
		plan := agent.Diff(d, obs, fx.ag.State())
		before := containersByName(t, fx.rt)
		creates := map[string]int{}
		for _, r := range d.Resources {
			creates[r.Name] = fx.rt.Creates(r.Name)
		}
		rep := propApply(t, fx, d)
		if len(rep.Outcome.Failed) != 0 {
			t.Fatalf("the apply failed %v\nplan %+v\ndisk:\n%s", rep.Outcome.Failed, plan.Steps, fx.rt.Paths())
		}
		if err := errors.Join(rep.Outcome.CheckForm(), rep.Outcome.CheckCounts()); err != nil {
			t.Fatalf("report: %v: %+v", err, rep.Outcome)
		}

		after := containersByName(t, fx.rt)
		held := map[string]bool{}
		declared := map[string]bool{}
		for _, s := range plan.Steps {
			switch s.Action {
			case agent.Reject:
				t.Fatalf("step %s rejected: %s", s.Name, s.Reason)
			case agent.Hold:
				held[s.Name] = true
			}
		}
		if len(held) > 0 && (!d.Adopted || allTaken(d)) {
			t.Fatalf("held %v on a node that finds nothing (adopted %v, taken %v)", held, d.Adopted, d.Taken)
		}
		for _, r := range d.Resources {
			declared[r.Name] = true
			if held[r.Name] {
				if r.Kind == declaration.KindContainer && !reflect.DeepEqual(before[r.Name], after[r.Name]) {
					t.Fatalf("held container %s touched: %+v, was %+v", r.Name, after[r.Name], before[r.Name])
				}
				if p := pathOf(r); p != "" && obs.Paths[p].PathInfo != stat(t, fx.rt, p) {
					t.Fatalf("held %s %s touched: %+v, was %+v", r.Kind, p, stat(t, fx.rt, p), obs.Paths[p].PathInfo)
				}
				continue
			}
			switch r.Kind {
			case declaration.KindContainer:
				c, ok := after[r.Name]
				if !ok || c.Module != r.Module || c.Digest != r.Digest || c.Stopped || !reflect.DeepEqual(c.Spec, *r.Container) {
					t.Fatalf("container %s is %+v (present %v), declared %+v of %s", r.Name, c, ok, *r.Container, r.Module)
				}
			case declaration.KindDirectory:
				if mode, ok := fx.rt.Dir(r.Directory.Path); !ok || mode != modeOr(r.Directory.Mode, agent.DefaultDirMode) {
					t.Fatalf("directory %s: mode %o (present %v), declared %o", r.Directory.Path, mode, ok, r.Directory.Mode)
				}
			case declaration.KindFile:
				content, mode, ok := fx.rt.File(r.File.Path)
				if !ok || string(content) != r.File.Content || mode != modeOr(r.File.Mode, agent.DefaultFileMode) {
					t.Fatalf("file %s: %q mode %o (present %v), declared %q mode %o", r.File.Path, content, mode, ok, r.File.Content, r.File.Mode)
				}
			}
		}
		for _, s := range plan.Steps {
			if s.Action == agent.Unchanged && s.Kind == declaration.KindContainer && fx.rt.Creates(s.Name) != creates[s.Name] {
				t.Fatalf("container %s, unchanged in the plan, was created again", s.Name)
			}
		}
		for name := range after {
			if !declared[name] {
				t.Fatalf("managed container %s is not declared and was left", name)
			}
		}
		for _, name := range unmanaged {
			if !slices.Contains(fx.rt.Names(), name) || !fx.rt.Running(name) {
				t.Fatalf("unmanaged container %s was touched", name)
			}
		}
		if content, mode, ok := fx.rt.File(declaration.HostsPath); !ok || string(content) != d.Hosts || mode != agent.HostsMode {
			t.Fatalf("hosts file %q mode %o (present %v), declared %q", content, mode, ok, d.Hosts)
		}

		obs, err = agent.Observe(ctx, fx.rt, d)
		if err != nil {
			t.Fatalf("observe again: %v", err)
		}
		again := agent.Diff(d, obs, fx.ag.State())
		if again.Hosts.Write {
			t.Fatalf("the hosts file is to be written again: %s", again.Hosts.Reason)
		}
		for _, s := range again.Steps {
			if s.Action != agent.Unchanged && !(s.Action == agent.Hold && held[s.Name]) {
				t.Fatalf("after the apply, %s %s is still to %s: %s", s.Kind, s.Name, s.Action, s.Reason)
			}
		}
	})
}

// allTaken reports whether every module of d's resources is taken.
func allTaken(d declaration.Declaration) bool {
	for _, r := range d.Resources {
		if !slices.Contains(d.Taken, r.Module) {
			return false
		}
	}
	return true
}

func modeOr(mode, def uint32) uint32 {
	if mode == 0 {
		return def
	}
	return mode
}

func stat(t rapid.TB, rt *simruntime.Runtime, p string) agent.PathInfo {
	t.Helper()
	info, err := rt.Stat(context.Background(), p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return info
}

// Property: whatever the node held before, applying a declaration twice
// changes nothing the second time, holds the same, and counts every
// resource exactly once.
func TestApplyTwiceIsANoOpProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fx := propFixture(t)
		// Something outside the mesh left directories behind.
		for i := range rapid.IntRange(0, 3).Draw(t, "directories left behind") {
			p := fmt.Sprintf("/d/mod%d/%d", rapid.IntRange(0, 3).Draw(t, "module"), i%3)
			_ = fx.rt.MakeDirectory(p, rapid.SampledFrom([]uint32{0o700, 0o755}).Draw(t, "mode")) // an existing path is fine
		}
		// The node applied something else before.
		if rapid.Bool().Draw(t, "applied before") {
			propApply(t, fx, drawDecl(t, "novox/0"))
		}
		d := drawDecl(t, "novox/1")
		found := foundBefore(fx, d)
		first := propApply(t, fx, d)
		second := propApply(t, fx, d)
		o := second.Outcome
		// Rule 3: a found directory is held on every pass, never applied, and
		// left exactly as it was.
		for name, mode := range found {
			for _, rep := range []agent.Report{first, second} {
				if !slices.ContainsFunc(rep.Outcome.Held, func(h events.Held) bool { return h.Name == name }) {
					t.Fatalf("found directory %s not held: %+v", name, rep.Outcome)
				}
			}
			if got, _ := fx.rt.Dir(dirPath(d, name)); got != mode {
				t.Fatalf("found directory %s touched: mode %o, was %o", name, got, mode)
			}
		}
		if o.Changes() != 0 || len(o.Updated) != 0 || len(o.Failed) != 0 || len(first.Outcome.Failed) != 0 {
			t.Fatalf("second apply changed something: %s\nfirst %+v\nsecond %+v\ndisk:\n%s",
				second.Summary(), first.Outcome, o, fx.rt.Paths())
		}
		if first.Summary() != second.Summary() || !slices.Equal(first.Outcome.Held, o.Held) {
			t.Fatalf("%q then %q", first.Summary(), second.Summary())
		}
		if o.Unchanged+len(o.Held) != o.Sent || o.Applied != o.Unchanged || o.Sent != len(d.Resources) {
			t.Fatalf("counts do not add up: %+v", o)
		}
	})
}

// foundBefore lists, with their modes, the directory resources of d that the
// agent will find: d is for an adopted node, their module is not taken, and
// the directory is on disk and was not made by the agent.
func foundBefore(fx *fixture, d declaration.Declaration) map[string]uint32 {
	out := map[string]uint32{}
	if !d.Adopted {
		return out
	}
	for _, r := range d.Resources {
		if r.Directory == nil || slices.Contains(d.Taken, r.Module) || slices.Contains(fx.ag.State().Made, r.Directory.Path) {
			continue
		}
		if mode, ok := fx.rt.Dir(r.Directory.Path); ok {
			out[r.Name] = mode
		}
	}
	return out
}

func dirPath(d declaration.Declaration, name string) string {
	for _, r := range d.Resources {
		if r.Name == name && r.Directory != nil {
			return r.Directory.Path
		}
	}
	return ""
}
