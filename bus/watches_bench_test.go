package bus_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
)

// BenchmarkPushToWatches (issue 32 item 2): n agents' watches on one
// embedded server, each agent its own connection (its own node user, in
// process: 10,000 over TCP would need 20,000 file descriptors in one
// process) watching its key and the roster, as agent.Run does; per op, one
// push of every node's declaration (pipelined, carrying a roster of 100
// routes) until every watch yielded its node's. Metrics: all-ms, from the
// first put to the last watch's value; put-ms, every put acknowledged;
// heap-MiB and heap-KiB/agent, the Go heap in use after the agents
// connected and watched less before, both ends of the connections (server
// and clients are this process); subs, the server's subscriptions.
//
//	go test -run '^$' -bench 'BenchmarkPushToWatches' -benchtime 3x -timeout 30m ./bus/
func BenchmarkPushToWatches(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) { benchPushToWatches(b, n) })
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func benchPushToWatches(b *testing.B, n int) {
	s := natstest.Start(b)
	ctl := natstest.Controller(b, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%05d", i)
	}
	before := heapInUse()
	watches := make([]*bus.Watch, n)
	var dial errgroup.Group
	dial.SetLimit(16)
	for i, node := range nodes {
		dial.Go(func() error {
			c, err := bus.NewCreds(s.Authority().Issuer(), node, []string{s.URL()}, nil)
			if err != nil {
				return err
			}
			nd, err := bus.DialNode(ctx, c, bus.InProcess(bus.NodeOptions{WaitForBus: true, RetryEvery: 100 * time.Millisecond}, s))
			if err != nil {
				return err
			}
			b.Cleanup(nd.Close)
			if watches[i], err = nd.Watch(ctx); err != nil {
				return err
			}
			_, err = nd.WatchRoster(ctx)
			return err
		})
	}
	if err := dial.Wait(); err != nil {
		b.Fatal(err)
	}
	heap := heapInUse() - before
	subs := bus.Subscriptions(s)

	var all, put time.Duration
	b.ResetTimer()
	for i := range b.N {
		r := declaration.NewRoster(uint64(i+1), routesN(100))
		ds := make([]declaration.Declaration, n)
		for j, node := range nodes {
			ds[j] = composedAgainst(node, i%9+1, r)
		}
		// The roster's put waits for the stream's answer while the server
		// delivers it to every agent and they decode it, on the same cores:
		// a deadline beyond JetStream's default 5 s; a put not acknowledged
		// within the batch's wait is put again.
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Minute)
		start := time.Now()
		todo := ds
		for try := 1; len(todo) > 0; try++ {
			var again []declaration.Declaration
			for j, err := range ctl.PutDeclarations(pctx, todo) {
				if err != nil {
					if try == 5 {
						b.Fatalf("put %s, try %d: %v", todo[j].Node, try, err)
					}
					again = append(again, todo[j])
				}
			}
			if len(again) > 0 {
				b.Logf("try %d: %d put(s) not acknowledged in time; putting them again", try, len(again))
			}
			todo = again
		}
		pcancel()
		put += time.Since(start)
		for j, w := range watches {
			for d := range w.Updates() {
				if d.ID == ds[j].ID {
					break
				}
			}
		}
		all += time.Since(start)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(per(all), "all-ms")
	b.ReportMetric(per(put), "put-ms")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(heap)/1024/float64(n), "heap-KiB/agent")
	b.ReportMetric(float64(subs), "subs")
}
