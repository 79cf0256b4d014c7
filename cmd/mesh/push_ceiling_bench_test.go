package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/commands"
	"meshplane/controllerd"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/internal/meshtest"
	"meshplane/sim"
)

// seedNodeCommands make node what seed 002's node was (sim's seedNode,
// BenchmarkIdlePass): adopted, ten modules of 11 containers, 11
// directories and 11 files taken (330 resources applied), and two modules
// assigned and not taken whose directories are found on disk with another
// mode (route-proxy: 10 directories and 3 containers; photos: 2 and 1),
// so 16 are held: 346 declared. Module names carry the node's, so that
// every node has modules of its own. found is what the node's disk holds
// before the mesh (mode 0755; declared 0700).
func seedNodeCommands(node string) (cs []commands.Command, found []string) {
	cs = []commands.Command{
		commands.AdoptNode{Node: node},
		commands.SetNodeSetting{Node: node, Key: events.SettingPrivateAddress, Value: "10.1.0.3"},
		commands.SetNodeSetting{Node: node, Key: events.SettingPortPrefix + "store", Value: "6852"},
	}
	for i := range 10 {
		mod := fmt.Sprintf("%s-app-%02d", node, i)
		spec := events.ModuleSpec{Routes: []string{mod + ".novox.be"}}
		for j := range 11 {
			dir := fmt.Sprintf("/var/lib/%s/d%02d", mod, j)
			spec.Directories = append(spec.Directories, events.DirectorySpec{Path: dir, Mode: "0750"})
			spec.Files = append(spec.Files, events.FileSpec{Path: dir + "/app.conf", Content: fmt.Sprintf("name = %s-%d\n", mod, j)})
			spec.Containers = append(spec.Containers, events.ContainerSpec{
				Name: fmt.Sprintf("%s-c%02d", mod, j), Image: fmt.Sprintf("registry.example/%s/c%d:1", mod, j),
				Env: map[string]string{"MODULE": mod}, Mounts: []events.Mount{{Source: dir, Target: "/data"}},
			})
		}
		cs = append(cs, commands.DefineModule{Module: mod, Spec: spec},
			commands.AssignModule{Module: mod, Node: node}, commands.TakeModule{Module: mod, Node: node})
	}
	held := []struct {
		mod        string
		dirs       []string
		containers [][2]string // name, the found path it mounts
	}{
		{"route-proxy", []string{"ca", "acme", "config", "logs", "sites", "certs", "keys", "cache", "state", "www"},
			[][2]string{{"proxy", "config"}, {"ca", "ca"}, {"acme", "acme"}}},
		{"photos", []string{"data", "cache"}, [][2]string{{"photos", "data"}}},
	}
	for _, h := range held {
		mod := node + "-" + h.mod
		spec := events.ModuleSpec{Routes: []string{mod + ".novox.be"}}
		for _, d := range h.dirs {
			p := "/var/lib/" + mod + "/" + d
			spec.Directories = append(spec.Directories, events.DirectorySpec{Path: p, Mode: "0700"})
			found = append(found, p)
		}
		for _, c := range h.containers {
			spec.Containers = append(spec.Containers, events.ContainerSpec{
				Name: mod + "-" + c[0], Image: "registry.example/" + h.mod + "/" + c[0] + ":1",
				Mounts: []events.Mount{{Source: "/var/lib/" + mod + "/" + c[1]}},
			})
		}
		cs = append(cs, commands.DefineModule{Module: mod, Spec: spec}, commands.AssignModule{Module: mod, Node: node})
	}
	return cs, found
}

// doAPI runs c through the controller's HTTP API, as the CLI would.
func doAPI(ctx context.Context, d *meshtest.TestDaemon, c commands.Command) error {
	var err error
	switch c := c.(type) {
	case commands.AdoptNode:
		_, err = d.Client.AdoptNode(ctx, api.NodeRequest{Operator: meshtest.TestOperator, Node: c.Node})
	case commands.SetNodeSetting:
		_, err = d.Client.SetSetting(ctx, api.SetSettingRequest{Operator: meshtest.TestOperator, Node: c.Node, Key: c.Key, Value: c.Value})
	case commands.DefineModule:
		_, err = d.Client.DefineModules(ctx, api.DefineModulesRequest{Operator: meshtest.TestOperator, Modules: []api.ModuleDefinition{{Module: c.Module, Spec: c.Spec}}})
	case commands.AssignModule:
		_, err = d.Client.Assign(ctx, api.ModuleNodeRequest{Operator: meshtest.TestOperator, Module: c.Module, Node: c.Node})
	case commands.TakeModule:
		_, err = d.Client.Take(ctx, api.ModuleNodeRequest{Operator: meshtest.TestOperator, Module: c.Module, Node: c.Node})
	default:
		err = fmt.Errorf("doAPI: %T not mapped", c)
	}
	if err != nil {
		return fmt.Errorf("%T %+v: %w", c, c, err)
	}
	return nil
}

// seedDeclaration is the declaration the controller composes for a node
// made by seedNodeCommands (seed is false: a node registered and nothing
// else, the 298-byte declaration of BenchmarkPushToRecorded's plain
// cases), composed by a controller of its own over a memory store.
func seedDeclaration(b *testing.B, node string, seed bool) declaration.Declaration {
	ctx := context.Background()
	m := sim.New(memstore.New())
	if _, err := m.AddNode(ctx, node); err != nil {
		b.Fatal(err)
	}
	if seed {
		cs, _ := seedNodeCommands(node)
		for _, c := range cs {
			if err := m.Do(ctx, c); err != nil {
				b.Fatalf("%T: %v", c, err)
			}
		}
	}
	c, err := commands.Compose(ctx, m.Handler, node, "")
	if err != nil {
		b.Fatal(err)
	}
	return c.Declaration
}

// benchRawNATS is the ceiling BenchmarkPushToRecorded is compared with, in
// the same run: the embedded NATS server alone (bus.StartServer, as
// controllerd.Run starts it), n agents each on its own connection with its own
// JWT user, watching its own key (bus.Node.Watch), answering each
// declaration at once with a report published to JetStream with its apply
// id as message id (deduplicated by the stream); the controller's end
// puts every node's declaration, pushWorkers at once, and its durable
// consumer hands each report to a handler that notes the time (pipelined:
// every put in one bus.PutDeclarations, as the controller's push now puts
// them, instead of pushWorkers puts each awaited). No store,
// no compose, no outbox, no HTTP. The declaration is the one the system
// case sends (seedDeclaration), under each node's name. Metrics as
// benchPushToRecorded's (push-ms: every put acknowledged).
func benchRawNATS(b *testing.B, n int, seed, pipelined bool) {
	const pushWorkers = 32 // controller's
	s := natstest.Start(b)
	ctl := natstest.Controller(b, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmpl := seedDeclaration(b, "node-0000", seed)

	rec := &recordings{}
	k, err := ctl.ConsumeReports(ctx, func(_ context.Context, r bus.Report) error {
		rec.recorded(r)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Stop(context.Background())

	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%04d", i)
	}
	declFor := func(node string, round int) declaration.Declaration {
		d := tmpl
		d.Node, d.ID, d.Correlation = node, fmt.Sprintf("%s/%d", node, round), uuid.NewString()
		return d
	}
	push := func(round int) error {
		if pipelined {
			ds := make([]declaration.Declaration, len(nodes))
			for i, node := range nodes {
				ds[i] = declFor(node, round)
			}
			errs := ctl.PutDeclarations(ctx, ds)
			for i, d := range ds {
				if errs != nil && errs[i] != nil {
					return errs[i]
				}
				rec.pushed(d)
			}
			return nil
		}
		var g errgroup.Group
		g.SetLimit(pushWorkers)
		for _, node := range nodes {
			d := declFor(node, round)
			g.Go(func() error {
				rec.pushed(d)
				_, err := ctl.PutDeclaration(ctx, d)
				return err
			})
		}
		return g.Wait()
	}
	all := rec.reset(n)
	var dial errgroup.Group
	dial.SetLimit(16)
	for _, node := range nodes {
		dial.Go(func() error { return rawAgent(ctx, s, node) })
	}
	if err := dial.Wait(); err != nil {
		b.Fatal(err)
	}
	if err := push(0); err != nil {
		b.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		b.Fatalf("the first reports were not all recorded within 2m")
	}

	var p50, p99, total, pushT, putP50, putP99 time.Duration
	b.ResetTimer()
	for i := range b.N {
		all := rec.reset(n)
		start := time.Now()
		if err := push(i + 1); err != nil {
			b.Fatal(err)
		}
		pushT += time.Since(start)
		select {
		case <-all:
		case <-time.After(time.Minute):
			b.Fatalf("not every report recorded within 1m of the push")
		}
		lat, fromPut := rec.latencies()
		putP50 += percentile(fromPut, 50)
		putP99 += percentile(fromPut, 99)
		p50 += percentile(lat, 50)
		p99 += percentile(lat, 99)
		total += lat[len(lat)-1]
	}
	b.StopTimer()
	reportPushMetrics(b, p50, p99, total, pushT, putP50, putP99)
}

// rawAgent connects as node and, until ctx ends, answers each declaration
// at once with a report that it applied every resource unchanged.
func rawAgent(ctx context.Context, s *bus.Server, node string) error {
	c, err := bus.NewCreds(s.Authority().Issuer(), node, []string{s.URL()}, nil)
	if err != nil {
		return err
	}
	nd, err := bus.DialNode(ctx, c, bus.NodeOptions{})
	if err != nil {
		return err
	}
	w, err := nd.Watch(ctx)
	if err != nil {
		nd.Close()
		return err
	}
	go func() {
		defer nd.Close()
		for d := range w.Updates() {
			id := uuid.Must(uuid.NewV7())
			r := bus.Report{
				Node: node, ApplyID: id, AppliedAt: time.Now(), Correlation: d.Correlation,
				Outcome: events.ApplyReported{Node: node, Declaration: d.ID, Digest: d.Digest, Sent: len(d.Resources),
					Unchanged: len(d.Resources), ApplyID: id.String()},
			}
			for ctx.Err() == nil {
				if _, err := nd.PublishReport(ctx, r); err == nil {
					break
				}
			}
		}
	}()
	return nil
}

// benchPushToRecordedSeed is benchPushToRecorded with every node made as
// seed 002's (seedNodeCommands: 346 resources, 16 held), through the API
// before its agent starts: each push composes 346 resources a node, and
// each agent diffs them against its simulated runtime (330 unchanged, 16
// held) and keeps its report on disk.
func benchPushToRecordedSeed(b *testing.B, n int) {
	rec := &recordings{}
	d := meshtest.StartDaemon(b, b.TempDir(), "", func(c *controllerd.Config) {
		c.Recorded, c.Pushed = rec.recorded, rec.pushed
	})
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%04d", i)
	}
	ctx := context.Background()
	if _, err := d.Client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: meshtest.TestOperator, Nodes: nodes}); err != nil {
		b.Fatal(err)
	}
	found := make([][]string, n)
	var setup errgroup.Group
	setup.SetLimit(4)
	for i, node := range nodes {
		cs, f := seedNodeCommands(node)
		found[i] = f
		setup.Go(func() error {
			for _, c := range cs {
				if err := doAPI(ctx, d, c); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := setup.Wait(); err != nil {
		b.Fatal(err)
	}
	all := rec.reset(n)
	credsDir := b.TempDir()
	agents := make([]*meshtest.Node, n)
	for i, name := range nodes {
		path := filepath.Join(credsDir, name+".creds")
		if err := controllerd.RegisterCreds(d.Cfg.Data, name, path, d.Ready.BusURLs, nil); err != nil {
			b.Fatal(err)
		}
		agents[i] = meshtest.StartNode(b, path, b.TempDir(), func(c *agentd.Config) {
			for _, p := range found[i] {
				if err := c.Sim.MakeDirectory(p, 0o755); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("the first applies were not all recorded within 5m")
	}
	runPushRounds(b, d, rec, n)
	// What was measured is seed 002's node: 346 declared, 16 held.
	for i, a := range agents {
		rs := a.Applies()
		if len(rs) == 0 {
			b.Fatalf("%s applied nothing", nodes[i])
		}
		if o := rs[len(rs)-1].Outcome; o.Sent != 346 || len(o.Held) != 16 {
			b.Fatalf("%s: last apply %d sent, %d held; want 346 and 16", nodes[i], o.Sent, len(o.Held))
		}
	}
}

// runPushRounds is the timed loop of the system cases: b.N forced pushes
// of every node, each until every node's report of it is recorded.
func runPushRounds(b *testing.B, d *meshtest.TestDaemon, rec *recordings, n int) {
	ctx := context.Background()
	var p50, p99, total, push, putP50, putP99 time.Duration
	defer profileTimed(b)()
	b.ResetTimer()
	for range b.N {
		all := rec.reset(n)
		start := time.Now()
		if _, err := d.Client.Push(ctx, api.PushRequest{Operator: meshtest.TestOperator}); err != nil {
			b.Fatal(err)
		}
		push += time.Since(start)
		select {
		case <-all:
		case <-time.After(time.Minute):
			b.Fatalf("not every report recorded within 1m of the push")
		}
		lat, fromPut := rec.latencies()
		if len(fromPut) != n {
			b.Fatalf("%d declarations put, want %d", len(fromPut), n)
		}
		putP50 += percentile(fromPut, 50)
		putP99 += percentile(fromPut, 99)
		p50 += percentile(lat, 50)
		p99 += percentile(lat, 99)
		total += lat[len(lat)-1]
	}
	b.StopTimer()
	reportPushMetrics(b, p50, p99, total, push, putP50, putP99)
}

// profileTimed starts a CPU profile of the timed loop alone, the whole
// process (controller and agents), when MESH_BENCH_CPUPROFILE names a
// file prefix: PREFIX-<case>.cpu (go test's -cpuprofile includes the
// setup, and must not be given with it). It returns what stops it.
func profileTimed(b *testing.B) func() {
	prefix := os.Getenv("MESH_BENCH_CPUPROFILE")
	if prefix == "" || b.N == 1 {
		return func() {}
	}
	f, err := os.Create(prefix + "-" + strings.NewReplacer("/", "_", ",", "_", "=", "-").Replace(b.Name()) + ".cpu")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func reportPushMetrics(b *testing.B, p50, p99, total, push, putP50, putP99 time.Duration) {
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(per(p50), "p50-ms")
	b.ReportMetric(per(p99), "p99-ms")
	b.ReportMetric(per(total), "all-ms")
	b.ReportMetric(per(push), "push-ms")
	b.ReportMetric(per(putP50), "put-p50-ms")
	b.ReportMetric(per(putP99), "put-p99-ms")
}
