package bus_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
	"meshplane/events"
)

// BenchmarkPushToReport measures the round trip the controller waits on:
// PutDeclaration for every node at once, each agent (its own NATS
// connection, watching its key) taking the declaration and publishing a
// report at once (a simulated apply that does nothing), and the
// controller's consumer handing the report to its handler. Per op, every
// node is pushed once. Metrics: p50-ms and p99-ms of push-to-recorded over
// every report of the run, total-ms the mean time from the first put to the
// last report recorded.
func BenchmarkPushToReport(b *testing.B) {
	for _, nodes := range []int{1, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchPushToReport(b, nodes) })
	}
}

func benchPushToReport(b *testing.B, nodes int) {
	s := natstest.Start(b)
	ctl := natstest.Controller(b, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	recorded := map[string]time.Time{} // node -> when its report was recorded
	all := make(chan struct{}, 1)
	k, err := ctl.ConsumeReports(ctx, func(_ context.Context, r bus.Report) error {
		mu.Lock()
		recorded[r.Node] = time.Now()
		if len(recorded) == nodes {
			all <- struct{}{}
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Stop(context.Background())

	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%04d", i)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, name := range names {
		g.Go(func() error { return runEchoAgent(gctx, ctx, s, name) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}

	var lat []time.Duration
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		mu.Lock()
		clear(recorded)
		mu.Unlock()
		pushed := make([]time.Time, nodes)
		start := time.Now()
		var pg errgroup.Group
		pg.SetLimit(64)
		for j, name := range names {
			d := benchDecl(name, i)
			pg.Go(func() error {
				pushed[j] = time.Now()
				_, err := ctl.PutDeclaration(ctx, d)
				return err
			})
		}
		if err := pg.Wait(); err != nil {
			b.Fatal(err)
		}
		select {
		case <-all:
		case <-time.After(2 * time.Minute):
			b.Fatalf("only %d of %d reports recorded within 2 minutes", len(recorded), nodes)
		}
		mu.Lock()
		last := start
		for j, name := range names {
			at := recorded[name]
			lat = append(lat, at.Sub(pushed[j]))
			if at.After(last) {
				last = at
			}
		}
		mu.Unlock()
		total += last.Sub(start)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[(len(lat)*99)/100]), "p99-ms")
	b.ReportMetric(ms(total)/float64(b.N), "total-ms")
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runEchoAgent connects as node and, until ctx ends, answers each
// declaration with a report. dialCtx bounds the connection and watch.
func runEchoAgent(dialCtx, ctx context.Context, s *bus.Server, node string) error {
	c, err := bus.NewCreds(s.Authority().Issuer(), node, []string{s.URL()}, nil)
	if err != nil {
		return err
	}
	n, err := bus.DialNode(dialCtx, c, bus.NodeOptions{})
	if err != nil {
		return err
	}
	w, err := n.Watch(ctx)
	if err != nil {
		n.Close()
		return err
	}
	go func() {
		defer n.Close()
		for d := range w.Updates() {
			id := uuid.Must(uuid.NewV7())
			r := bus.Report{
				Node: node, ApplyID: id, AppliedAt: time.Now(), Correlation: d.Correlation,
				Outcome: events.ApplyReported{Node: node, Declaration: d.ID, Digest: d.Digest, Sent: len(d.Resources),
					Unchanged: len(d.Resources), ApplyID: id.String()},
			}
			for ctx.Err() == nil {
				if _, err := n.PublishReport(ctx, r); err == nil {
					break
				}
			}
		}
	}()
	return nil
}

// benchDecl is a declaration of ten directories and a container, about 2 KB.
func benchDecl(node string, i int) declaration.Declaration {
	d := declaration.Declaration{Node: node, ID: fmt.Sprintf("%s/%d", node, i+1), Correlation: uuid.NewString()}
	for j := range 10 {
		p := fmt.Sprintf("/var/lib/mod%d/data", j)
		d.Resources = append(d.Resources, declaration.Resource{Name: p, Kind: declaration.KindDirectory, Module: fmt.Sprintf("mod%d", j),
			Directory: &declaration.Directory{Path: p, Mode: 0o750}})
	}
	d.Resources = append(d.Resources, declaration.Resource{Name: "web", Kind: declaration.KindContainer, Module: "mod0",
		Container: &declaration.Container{Image: "registry:5000/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0",
			Mounts: []declaration.Mount{{Source: "/var/lib/mod0/data", Target: "/data"}, {Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true}}}})
	for j := range d.Resources {
		d.Resources[j].Digest = declaration.Digest(d.Resources[j].Spec())
	}
	d.Digest = declaration.Digest(d.Resources)
	return d
}
