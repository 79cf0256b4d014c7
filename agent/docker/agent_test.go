package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/google/uuid"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/declaration"
	"meshplane/events"
)

// The seeds' cases, with real containers: the agent applies declarations
// through the Docker runtime, and the tests read the engine.

func ctrRes(name, module string, c declaration.Container) declaration.Resource {
	return declaration.Resource{Name: name, Kind: declaration.KindContainer, Module: module, Digest: declaration.Digest(&c), Container: &c}
}

func dirRes(name, module, p string, mode uint32) declaration.Resource {
	d := declaration.Directory{Path: p, Mode: mode}
	return declaration.Resource{Name: name, Kind: declaration.KindDirectory, Module: module, Digest: declaration.Digest(&d), Directory: &d}
}

func fileRes(name, module, p, content string, mode uint32) declaration.Resource {
	f := declaration.File{Path: p, Mode: mode, Content: content}
	return declaration.Resource{Name: name, Kind: declaration.KindFile, Module: module, Digest: declaration.Digest(&f), File: &f}
}

// web is a container as compose makes it: the hosts file mounted read-only
// at /etc/hosts, a data directory, a volume, a network.
func web(data string) declaration.Container {
	return declaration.Container{
		Image:   testRef,
		Command: []string{"serve", "--port", "3000"},
		Env:     []string{"STORE_PORT=6852"},
		Mounts: []declaration.Mount{
			{Source: "cache", Target: "/cache", Volume: true},
			{Source: data, Target: "/data"},
			{Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true},
		},
		Networks: []string{"mesh"},
	}
}

func forge(data string) []declaration.Resource {
	return []declaration.Resource{
		ctrRes("web", "forge", web(data)),
		dirRes("forge-data", "forge", data, 0o700),
		fileRes("forge-conf", "forge", "/etc/forge/app.ini", "[server]\nport = 3000\n", 0o640),
	}
}

const hosts1 = "10.1.0.3\tsearxng.zurag.be\n"

func decl(node, id, hosts string, rs ...declaration.Resource) declaration.Declaration {
	rs = slices.Clone(rs)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	d := declaration.Declaration{Node: node, ID: node + "/" + id, Resources: rs, Hosts: hosts}
	d.Digest = declaration.Digest(struct {
		R []declaration.Resource
		H string
	}{rs, hosts})
	return d
}

func newAgent(t testing.TB, r agent.Runtime, node string) *agent.Agent {
	t.Helper()
	ag, err := agent.New(agent.Config{
		Node: node, Runtime: r, Outbox: agent.NewMemOutbox(),
		Deliver: func(context.Context, agent.Report) error { return nil },
		Now:     time.Now, NewID: uuid.NewV7,
	})
	if err != nil {
		t.Fatal(err)
	}
	return ag
}

func apply(t testing.TB, ag *agent.Agent, d declaration.Declaration) events.ApplyReported {
	t.Helper()
	return applyWithin(t, ag, d, 90*time.Second)
}

func applyWithin(t testing.TB, ag *agent.Agent, d declaration.Declaration, within time.Duration) events.ApplyReported {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	rep, err := ag.Apply(ctx, d)
	if err != nil {
		t.Fatalf("apply %s: %v", d.ID, err)
	}
	return rep.Outcome
}

func noChange(t testing.TB, o events.ApplyReported) {
	t.Helper()
	if o.Changes() != 0 || len(o.Updated) != 0 || len(o.Held) != 0 || len(o.Failed) != 0 || o.Unchanged != o.Sent {
		t.Fatalf("not a no-op: %+v", o)
	}
}

// TestSecondApplyReportsZeroChanges (rule 4): a directory at 0700, a file at
// 0640 and a container with a volume and a network, applied twice: the
// second pass changes nothing and says so.
//
// The second pass observes with one ContainerList and no inspect (item 3 of
// issue 8): the digest, the spec and the state come from the list.
func TestSecondApplyReportsZeroChanges(t *testing.T) {
	setup(t)
	cnt := &counting{Engine: eng}
	node := randomNode(t)
	r := newRTFor(t, node, node+"-", t.TempDir(), cnt)
	ag := newAgent(t, r, r.node)
	d := decl(r.node, "1", hosts1, forge("/srv/forge")...)
	first := apply(t, ag, d)
	if len(first.Created) != 3 || len(first.Failed) != 0 {
		t.Fatalf("first apply: %+v", first)
	}
	id := r.inspect(t, "web").ID
	lists, inspects := cnt.lists.Load(), cnt.inspects.Load()
	noChange(t, apply(t, ag, d))
	if l, i := cnt.lists.Load()-lists, cnt.inspects.Load()-inspects; l != 1 || i != 0 {
		t.Errorf("a no-op pass made %d list and %d inspect calls, want 1 and 0", l, i)
	}
	if got := r.inspect(t, "web").ID; got != id {
		t.Fatalf("web was recreated by a no-op pass: %s, then %s", id, got)
	}
	fi, err := os.Stat(filepath.Join(r.root, "/srv/forge"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v %v, want 0700", fi.Mode(), err)
	}
}

// TestRosterChangeRecreatesNothing (rule 2, seed 000): a new routed name
// rewrites the hosts file in place (same inode), the running container reads
// it, and nothing is recreated or counted.
func TestRosterChangeRecreatesNothing(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	rs := forge("/srv/forge")
	apply(t, ag, decl(r.node, "1", hosts1, rs...))
	before := r.inspect(t, "web")
	if got := rosterSeen(t, r, "web"); got != hosts1 {
		t.Fatalf("container reads /etc/hosts = %q, want %q", got, hosts1)
	}
	hostsFile := filepath.Join(r.root, declaration.HostsPath)
	ino := inode(t, hostsFile)

	hosts2 := hosts1 + "10.1.0.4\tdrive.novox.be\n"
	o := apply(t, ag, decl(r.node, "2", hosts2, rs...))
	noChange(t, o)
	if after := r.inspect(t, "web"); after.ID != before.ID || after.State.StartedAt != before.State.StartedAt {
		t.Fatalf("a roster change recreated or restarted web")
	}
	if got := inode(t, hostsFile); got != ino {
		t.Fatalf("hosts file replaced (inode %d, then %d): a running container keeps the old one", ino, got)
	}
	if got := rosterSeen(t, r, "web"); got != hosts2 {
		t.Fatalf("running container reads /etc/hosts = %q, want the new roster %q", got, hosts2)
	}
	// A removed name too.
	apply(t, ag, decl(r.node, "3", "", rs...))
	if got := rosterSeen(t, r, "web"); got != "" {
		t.Fatalf("running container reads /etc/hosts = %q after the roster emptied", got)
	}
}

func inode(t testing.TB, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestMovedMountRecreatesAndSaysSo (rule 5, seed 002).
func TestMovedMountRecreatesAndSaysSo(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	apply(t, ag, decl(r.node, "1", hosts1, forge("/srv/forge")...))
	before := r.inspect(t, "web").ID
	o := apply(t, ag, decl(r.node, "2", hosts1, forge("/srv/forge2")...))
	want := []events.Replaced{{Name: "web", Fields: []string{"mounts./data"}}}
	if fmt.Sprint(o.Replaced) != fmt.Sprint(want) || len(o.Failed) != 0 {
		t.Fatalf("replaced %+v (failed %+v), want %+v", o.Replaced, o.Failed, want)
	}
	after := r.inspect(t, "web")
	if after.ID == before {
		t.Fatal("web was not recreated")
	}
	var src string
	for _, m := range after.Mounts {
		if m.Destination == "/data" {
			src = m.Source
		}
	}
	if want := filepath.Join(r.root, "/srv/forge2"); src != want {
		t.Fatalf("/data mounts %q, want %q", src, want)
	}
}

// TestHoldsOnAdoptedNode (rule 3, seed 002): what an untaken module finds on
// an adopted node is held, its container never created; once taken, both
// are applied.
func TestHoldsOnAdoptedNode(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	const ca = "/var/lib/route-proxy/ca"
	found := filepath.Join(r.root, ca)
	if err := os.MkdirAll(found, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(found, 0o700); err != nil {
		t.Fatal(err)
	}
	caCtr := declaration.Container{Image: testRef, Mounts: []declaration.Mount{{Source: ca, Target: "/ca"}}}
	rs := []declaration.Resource{
		ctrRes("ca", "route-proxy", caCtr),
		ctrRes("proxy", "route-proxy", declaration.Container{Image: testRef}),
		dirRes("route-proxy-ca", "route-proxy", ca, 0o755),
	}
	d := decl(r.node, "1", hosts1, rs...)
	d.Adopted = true
	o := apply(t, ag, d)
	var held []string
	for _, h := range o.Held {
		held = append(held, h.Name)
	}
	if !slices.Equal(held, []string{"ca", "route-proxy-ca"}) || !slices.Equal(o.Created, []string{"proxy"}) {
		t.Fatalf("held %v, created %v; want [ca route-proxy-ca] held, [proxy] created", held, o.Created)
	}
	if _, err := eng.ContainerInspect(context.Background(), r.prefix+"ca"); err == nil {
		t.Fatal("a held container runs")
	}
	if fi, _ := os.Stat(found); fi.Mode().Perm() != 0o700 {
		t.Fatalf("a found directory was touched: %v", fi.Mode())
	}
	d2 := decl(r.node, "2", hosts1, rs...)
	d2.Adopted, d2.Taken = true, []string{"route-proxy"}
	o = apply(t, ag, d2)
	if len(o.Held) != 0 || !slices.Equal(o.Created, []string{"ca"}) || len(o.Updated) != 1 {
		t.Fatalf("after take: %+v; want ca created, the directory updated, nothing held", o)
	}
	if !r.inspect(t, "ca").State.Running {
		t.Fatal("ca does not run after take")
	}
}

// TestOutsideChanges: a managed container stopped behind the agent's back is
// started and reported; one removed is recreated and reported.
func TestOutsideChanges(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	d := decl(r.node, "1", hosts1, forge("/srv/forge")...)
	apply(t, ag, d)
	id := r.inspect(t, "web").ID
	if err := r.StopContainer("web"); err != nil {
		t.Fatal(err)
	}
	o := apply(t, ag, d)
	if fmt.Sprint(o.Updated) != fmt.Sprint([]events.Replaced{{Name: "web", Fields: []string{"running"}}}) || o.Changes() != 0 {
		t.Fatalf("after a stop: %+v; want web updated (running), nothing else", o)
	}
	if in := r.inspect(t, "web"); in.ID != id || !in.State.Running {
		t.Fatalf("web: id %s running %v; want the same container, running", in.ID, in.State.Running)
	}
	if err := eng.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	o = apply(t, ag, d)
	if !slices.Equal(o.Created, []string{"web"}) || o.Changes() != 1 {
		t.Fatalf("after a removal: %+v; want web created", o)
	}
	noChange(t, apply(t, ag, d))
}

// TestOtherNodesAndUnlabelledAreLeftAlone: two nodes on one engine with the
// same names, and a container run by hand: neither node lists, starts,
// removes or replaces what is not its own.
func TestOtherNodesAndUnlabelledAreLeftAlone(t *testing.T) {
	a := newRT(t)
	b := newRTFor(t, randomNode(t), a.prefix, t.TempDir(), eng) // same engine names as a
	agA, agB := newAgent(t, a, a.node), newAgent(t, b, b.node)
	apply(t, agA, decl(a.node, "1", hosts1, forge("/srv/forge")...))
	if err := a.RunUnmanaged("by-hand", ""); err != nil {
		t.Fatal(err)
	}
	webID, handID := a.inspect(t, "web").ID, a.inspect(t, "by-hand").ID

	ctx := context.Background()
	if got, err := b.ListContainers(ctx); err != nil || len(got) != 0 {
		t.Fatalf("node b lists %+v (%v), want nothing", got, err)
	}
	if o := apply(t, agB, decl(b.node, "1", "")); len(o.Removed) != 0 {
		t.Fatalf("node b removed %v", o.Removed)
	}
	for _, call := range []struct {
		name string
		err  error
		want error
	}{
		{"b removes a's web", b.RemoveContainer(ctx, "web"), agent.ErrNotFound},
		{"b starts a's web", b.StartContainer(ctx, "web"), agent.ErrNotFound},
		{"b creates over a's web", b.CreateContainer(ctx, agent.Container{Name: "web", Spec: declaration.Container{Image: testRef}}), agent.ErrExists},
		{"a removes by-hand", a.RemoveContainer(ctx, "by-hand"), agent.ErrNotFound},
	} {
		if !errors.Is(call.err, call.want) {
			t.Errorf("%s: %v, want %v", call.name, call.err, call.want)
		}
	}
	// a's agent removes its own container and nothing else.
	if o := apply(t, agA, decl(a.node, "2", "")); !slices.Equal(o.Removed, []string{"web"}) {
		t.Fatalf("node a removed %v, want [web]", o.Removed)
	}
	if _, err := eng.ContainerInspect(ctx, webID); err == nil {
		t.Fatal("a's web is still there")
	}
	if in, err := eng.ContainerInspect(ctx, handID); err != nil || !in.State.Running {
		t.Fatalf("the container run by hand was touched: %v", err)
	}
}

// TestMissingImageIsAFailedResource: an image the store does not have, or a
// store nothing listens at, fails its resource with a clear error, soon.
func TestMissingImageIsAFailedResource(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	zero := "sha256:" + strings.Repeat("0", 64)
	at, _, _ := strings.Cut(testRef, "/") // the store's address
	start := time.Now()
	d := decl(r.node, "1", hosts1,
		ctrRes("ghost", "forge", declaration.Container{Image: at + "/forge/ghost@" + zero}),
		ctrRes("nowhere", "forge", declaration.Container{Image: "127.0.0.1:1/forge/web@" + zero}),
		ctrRes("ok", "forge", declaration.Container{Image: testRef}),
	)
	o := apply(t, ag, d)
	if len(o.Failed) != 2 || !slices.Equal(o.Created, []string{"ok"}) {
		t.Fatalf("%+v; want ghost and nowhere failed, ok created", o)
	}
	for _, f := range o.Failed {
		if !strings.Contains(f.Error, docker.ErrImage.Error()) {
			t.Errorf("%s failed with %q, want it to say %q", f.Name, f.Error, docker.ErrImage)
		}
	}
	if el := time.Since(start); el > 60*time.Second {
		t.Errorf("a missing image took %v to fail", el)
	}
}

// faulty is an engine that can be cut, or made to fail one container's
// create.
type faulty struct {
	docker.Engine
	mu         sync.Mutex
	down       bool   // every call fails
	downAfter  bool   // every call but ContainerList fails
	failCreate string // the engine name whose create fails
}

var errCut = errors.New("connection refused (injected)")

func (f *faulty) check(list bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down || (f.downAfter && !list) {
		return errCut
	}
	return nil
}

func (f *faulty) set(fn func(f *faulty)) { f.mu.Lock(); fn(f); f.mu.Unlock() }

func (f *faulty) ContainerList(ctx context.Context, o container.ListOptions) ([]container.Summary, error) {
	if err := f.check(true); err != nil {
		return nil, err
	}
	return f.Engine.ContainerList(ctx, o)
}

func (f *faulty) ContainerCreate(ctx context.Context, c *container.Config, h *container.HostConfig, n *networkConfig, p *platform, name string) (container.CreateResponse, error) {
	if err := f.check(false); err != nil {
		return container.CreateResponse{}, err
	}
	f.mu.Lock()
	fail := f.failCreate == name
	f.mu.Unlock()
	if fail {
		return container.CreateResponse{}, fmt.Errorf("create %s: %w", name, errCut)
	}
	return f.Engine.ContainerCreate(ctx, c, h, n, p, name)
}

func (f *faulty) ImageInspect(ctx context.Context, ref string, o ...client.ImageInspectOption) (imageInspect, error) {
	if err := f.check(false); err != nil {
		return imageInspect{}, err
	}
	return f.Engine.ImageInspect(ctx, ref, o...)
}

// TestEngineFaults (rule 7's evidence, seed 000): an engine failing mid-pass
// gives a report naming the failed resources and their errors, never a
// silent success; an engine not reachable is an apply error; the next pass
// continues.
func TestEngineFaults(t *testing.T) {
	setup(t)
	f := &faulty{Engine: eng}
	node := randomNode(t)
	r := newRTFor(t, node, node+"-", t.TempDir(), f)
	ag := newAgent(t, r, node)
	two := append(forge("/srv/forge"), ctrRes("worker", "forge", declaration.Container{Image: testRef}))
	d := decl(node, "1", hosts1, two...)

	f.set(func(f *faulty) { f.failCreate = r.prefix + "worker" })
	o := apply(t, ag, d)
	if len(o.Failed) != 1 || o.Failed[0].Name != "worker" || !strings.Contains(o.Failed[0].Error, "connection refused") || !slices.Contains(o.Created, "web") {
		t.Fatalf("one create failing: %+v; want worker failed with its error, web created", o)
	}
	webID := r.inspect(t, "web").ID
	f.set(func(f *faulty) { f.failCreate = "" })
	if o := apply(t, ag, d); !slices.Equal(o.Created, []string{"worker"}) || len(o.Failed) != 0 {
		t.Fatalf("next pass: %+v; want worker created", o)
	}
	// The engine fails after the pass has observed: every change fails, and
	// says why.
	if err := eng.ContainerRemove(context.Background(), r.prefix+"worker", container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *faulty) { f.downAfter = true })
	if o := apply(t, ag, d); len(o.Failed) != 1 || o.Failed[0].Name != "worker" || o.Applied != o.Sent-1 {
		t.Fatalf("engine failing mid-pass: %+v; want worker failed", o)
	}
	// The engine unreachable: nothing observed, nothing done, and a report
	// with every resource failed and why.
	f.set(func(f *faulty) { f.downAfter, f.down = false, true })
	if o := apply(t, ag, d); o.Applied != 0 || len(o.Failed) != o.Sent || !strings.Contains(o.Failed[0].Error, "connection refused") {
		t.Fatalf("apply with the engine down: %+v; want every resource failed, naming the refusal", o)
	}
	f.set(func(f *faulty) { f.down = false })
	if o := apply(t, ag, d); !slices.Equal(o.Created, []string{"worker"}) || len(o.Failed) != 0 || len(o.Replaced) != 0 {
		t.Fatalf("pass after the engine came back: %+v; want worker created, nothing replaced", o)
	}
	// A failure to look replaced nothing (seed 000): web is the container
	// the first pass made.
	if got := r.inspect(t, "web").ID; got != webID {
		t.Fatalf("web was recreated across the faults")
	}

	// A real client to a socket nothing listens on.
	cl, err := client.NewClientWithOpts(client.WithHost("unix:///nonexistent/docker.sock"), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	dead := newRTFor(t, randomNode(t), "x-", t.TempDir(), cl)
	if o := apply(t, newAgent(t, dead, dead.node), decl(dead.node, "1", "", two...)); o.Applied != 0 || len(o.Failed) != o.Sent {
		t.Fatalf("apply with no engine: %+v, want every resource failed", o)
	}
}

type (
	networkConfig = network.NetworkingConfig
	platform      = ocispec.Platform
	imageInspect  = image.InspectResponse
)

// TestConcurrentCreatesMakeOneNetwork: containers created at once that join
// a network not yet made all join the one network made for them.
func TestConcurrentCreatesMakeOneNetwork(t *testing.T) {
	r := newRT(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := declaration.Container{Image: testRef, Networks: []string{"mesh"}}
			errs[i] = r.CreateContainer(ctx, agent.Container{Name: fmt.Sprintf("c%d", i), Module: "m", Digest: declaration.Digest(&spec), Spec: spec})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	nets, err := eng.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("name", r.prefix+"mesh"))})
	if err != nil || len(nets) != 1 {
		t.Fatalf("networks named %smesh: %d (%v), want 1", r.prefix, len(nets), err)
	}
}

type fixedSecrets map[string]string

func (f fixedSecrets) Secrets(_ context.Context, want []declaration.Secret) (map[string]string, error) {
	out := map[string]string{}
	for _, w := range want {
		out[w.Secret] = f[w.Secret+" "+w.Digest]
	}
	return out, nil
}

// TestSecretInTheEnvOnly: a container reading a secret runs with its value
// in its environment, which no label holds (the spec label names the
// secret and its digest); a second pass changes nothing, and a rotated
// digest replaces it with the new value.
func TestSecretInTheEnvOnly(t *testing.T) {
	r := newRT(t)
	ag, err := agent.New(agent.Config{
		Node: r.node, Runtime: r, Outbox: agent.NewMemOutbox(),
		Deliver: func(context.Context, agent.Report) error { return nil },
		Now:     time.Now, NewID: uuid.NewV7,
		Secrets: fixedSecrets{"forge-db hmac-sha256:1": "pw-one-Value", "forge-db hmac-sha256:2": "pw-two-Value"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := web("/srv/forge")
	c.Secrets = []declaration.Secret{{Env: "DB_PASSWORD", Secret: "forge-db", Digest: "hmac-sha256:1"}}
	rs := append(forge("/srv/forge")[1:], ctrRes("web", "forge", c))
	if o := apply(t, ag, decl(r.node, "1", hosts1, rs...)); len(o.Failed) != 0 {
		t.Fatalf("first apply: %+v", o)
	}
	check := func(value string) {
		t.Helper()
		in := r.inspect(t, "web")
		if !slices.Contains(in.Config.Env, "DB_PASSWORD="+value) {
			t.Fatalf("web's env %v has no DB_PASSWORD=%s", in.Config.Env, value)
		}
		for k, v := range in.Config.Labels {
			if strings.Contains(v, value) {
				t.Fatalf("label %s holds the secret's value", k)
			}
		}
	}
	check("pw-one-Value")
	noChange(t, apply(t, ag, decl(r.node, "1", hosts1, rs...)))
	c.Secrets[0].Digest = "hmac-sha256:2"
	rs[len(rs)-1] = ctrRes("web", "forge", c)
	o := apply(t, ag, decl(r.node, "2", hosts1, rs...))
	if len(o.Replaced) != 1 || !slices.Equal(o.Replaced[0].Fields, []string{"secret.DB_PASSWORD"}) {
		t.Fatalf("rotation: %+v", o)
	}
	check("pw-two-Value")
}
