package bus_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
)

var manyAgents = flag.Int("agents", 0, "TestManyAgentsConverge's agents (0: 2,500, or 200 under -race)")

// TestManyAgentsConverge (issue 32 item 1): 2,500 in-process agents on one
// embedded bus, each agent.Run with its own connection (its own node user),
// its own watch of its key and of the roster, the simulated runtime and an
// outbox in memory; one push of every node's declaration (pipelined, as
// the controller's push puts them) and every node's report of it is
// recorded. Before, the agents past about 1,000 could not watch: every
// watch was a consumer of the one bucket's stream, and nats-server 2.15
// gives a stream 1,000 by default ("maximum consumers limit reached").
//
// Under -race it runs 200: the race detector allows 8,128 live goroutines
// and each agent's connection and loop have about six. Taskfile's test
// task runs the 2,500 without -race (-agents=N sets any count).
func TestManyAgentsConverge(t *testing.T) {
	n := *manyAgents
	if n == 0 {
		n = 2500
		if raceEnabled {
			n = 200
		}
	}
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var mu sync.Mutex
	want := map[string]string{} // node -> the declaration its report must name
	all := make(chan struct{})
	k, err := ctl.ConsumeReports(ctx, func(_ context.Context, r bus.Report) error {
		mu.Lock()
		defer mu.Unlock()
		if id, ok := want[r.Node]; ok && id == r.Outcome.Declaration {
			delete(want, r.Node)
			if len(want) == 0 {
				close(all)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop(context.Background())

	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%04d", i)
	}
	started := time.Now()
	runs := make(chan error, n)
	var dial errgroup.Group
	dial.SetLimit(16)
	for _, node := range nodes {
		dial.Go(func() error {
			c, err := bus.NewCreds(s.Authority().Issuer(), node, []string{s.URL()}, nil)
			if err != nil {
				return err
			}
			nd, err := bus.DialNode(ctx, c, bus.NodeOptions{WaitForBus: true, RetryEvery: 100 * time.Millisecond})
			if err != nil {
				return err
			}
			go func() {
				defer nd.Close()
				runs <- agent.Run(ctx, agent.RunConfig{
					Node: node, Runtime: simruntime.New(), Outbox: agent.NewMemOutbox(),
					Source: nd.Agent(), Reporter: nd.Agent(), Interval: time.Hour,
					Logger: slog.New(slog.DiscardHandler),
				})
			}()
			return nil
		})
	}
	if err := dial.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d agents connected in %v", n, time.Since(started).Round(time.Millisecond))

	r := declaration.NewRoster(1, routesN(3))
	ds := make([]declaration.Declaration, n)
	mu.Lock()
	for i, node := range nodes {
		ds[i] = composedAgainst(node, 1, r)
		want[node] = ds[i].ID
	}
	mu.Unlock()
	pushed := time.Now()
	// A put not acknowledged in time (a loaded machine, under -race) is put
	// again, as the controller's next push would: what is tested is that
	// every agent hears what was put.
	for try := 1; len(ds) > 0; try++ {
		var again []declaration.Declaration
		for i, err := range ctl.PutDeclarations(ctx, ds) {
			if err != nil {
				if try == 3 {
					t.Fatalf("put %s, try %d: %v", ds[i].Node, try, err)
				}
				again = append(again, ds[i])
			}
		}
		if len(again) > 0 {
			t.Logf("try %d: %d put(s) not acknowledged in time; putting them again", try, len(again))
		}
		ds = again
	}
	select {
	case <-all:
		t.Logf("one push to %d agents: every report recorded %v after it", n, time.Since(pushed).Round(time.Millisecond))
	case err := <-runs:
		t.Fatalf("an agent stopped: %v", err)
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("%d of %d nodes' reports not recorded", len(want), n)
	}
	cancel()
	for range n {
		if err := <-runs; err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	}
}
