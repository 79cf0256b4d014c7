package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/bus"
	"meshplane/controllerd"
	"meshplane/declaration"
	"meshplane/internal/meshtest"
)

// BenchmarkPushToRecorded measures a push to every node until every node's
// report of it is recorded, through the whole system in one process: the
// controller (controllerd.Run: bolt store, embedded NATS, HTTP API) and one
// agent per node (agentd.Run: its own NATS connection and watch, the
// simulated runtime, its outbox on disk). Each iteration is one forced push
// of every node (POST /v1/push); per node, the time from the push request
// to its report recorded in the store. Reported: p50 and p99 of those, and
// the total (push request to the last report recorded).
//
// The nodes are registered with no module assigned (assigning 1,000 nodes
// one command at a time would compose every node each time), so each apply
// has nothing to create: the figure is the transport and the recording,
// not a runtime's work.
//
// The command runs BenchmarkPushToRecordedHosts too (the same agents on
// network-namespace hosts, each part a process), in the same run:
//
//	go test -run '^$' -bench BenchmarkPushToRecorded -benchtime 3x -timeout 40m ./cmd/mesh/
func BenchmarkPushToRecorded(b *testing.B) {
	for _, n := range []int{1, 50, 1000} {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) { benchPushToRecorded(b, n, false) })
	}
	// 5,000: past the 1,000 consumers nats-server 2.15 gives a stream by
	// default, which the agents' watches were until they became core
	// subscriptions to their keys republished (package bus). agentd.Run
	// holds about six descriptors an agent (its lock, its outbox, its
	// files, both ends of its connection) and 5,000 of them in one process
	// pass the 20,000 a process may open on the machine these were measured
	// on ("too many open files" at about 3,200): the agents run in 5 child
	// processes of 1,000 (benchPushToRecordedProcs), the controller here.
	b.Run("agents=5000,procs=5", func(b *testing.B) { benchPushToRecordedProcs(b, 5000, 5) })
	// Its ceiling: the bus's round trip alone, every agent in this process.
	b.Run("raw-nats,agents=5000,puts=pipelined", func(b *testing.B) { benchRawNATS(b, 5000, false, true) })
	// The ceiling, in the same run: the embedded NATS alone (benchRawNATS).
	// 50: as many as BenchmarkPushToRecordedHosts runs on its hosts.
	b.Run("raw-nats,agents=50,puts=pipelined", func(b *testing.B) { benchRawNATS(b, 50, false, true) })
	b.Run("raw-nats,agents=1000", func(b *testing.B) { benchRawNATS(b, 1000, false, false) })
	// The same with the puts pipelined (bus.PutDeclarations), as the
	// controller's push puts them.
	b.Run("raw-nats,agents=1000,puts=pipelined", func(b *testing.B) { benchRawNATS(b, 1000, false, true) })
	// Seed 002's node (346 resources, 16 held) on every node: compose and
	// the agents' diff measured too; 20 nodes, since each is made through
	// the API one command at a time (27 commands a node).
	b.Run("agents=20,node=seed-002", func(b *testing.B) { benchPushToRecordedSeed(b, 20) })
	b.Run("raw-nats,agents=20,node=seed-002", func(b *testing.B) { benchRawNATS(b, 20, true, false) })
	b.Run("raw-nats,agents=20,node=seed-002,puts=pipelined", func(b *testing.B) { benchRawNATS(b, 20, true, true) })
}

// recordings collects, per node, when its first report after mark was
// recorded.
type recordings struct {
	mu    sync.Mutex
	since time.Time
	at    map[string]time.Time
	put   map[string]time.Time // when the node's declaration was put on the bus
	all   chan struct{}        // closed when want nodes have one
	want  int
}

func (r *recordings) pushed(d declaration.Declaration) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.put != nil {
		if _, ok := r.put[d.Node]; !ok {
			r.put[d.Node] = now
		}
	}
}

func (r *recordings) reset(want int) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.since, r.at, r.put, r.want, r.all = time.Now(), map[string]time.Time{}, map[string]time.Time{}, want, make(chan struct{})
	return r.all
}

func (r *recordings) recorded(rep bus.Report) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil || rep.AppliedAt.Before(r.since) {
		return
	}
	if _, ok := r.at[rep.Node]; ok {
		return
	}
	r.at[rep.Node] = now
	if len(r.at) == r.want {
		close(r.all)
	}
}

// latencies returns, sorted, each node's time from the push request to its
// report recorded, and from its declaration put on the bus to its report
// recorded.
func (r *recordings) latencies() (fromPush, fromPut []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for node, at := range r.at {
		fromPush = append(fromPush, at.Sub(r.since))
		if put, ok := r.put[node]; ok {
			fromPut = append(fromPut, at.Sub(put))
		}
	}
	slices.Sort(fromPush)
	slices.Sort(fromPut)
	return fromPush, fromPut
}

func benchPushToRecorded(b *testing.B, n int, memOutbox bool) {
	rec := &recordings{}
	d := meshtest.StartDaemon(b, b.TempDir(), "", func(c *controllerd.Config) {
		c.Recorded, c.Pushed = rec.recorded, rec.pushed
	})
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%04d", i)
	}
	ctx := context.Background()
	// 500 a request: 5,000 in one outlast the client's timeout.
	for batch := range slices.Chunk(nodes, 500) {
		if _, err := d.Client.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: meshtest.TestOperator, Nodes: batch}); err != nil {
			b.Fatal(err)
		}
	}
	all := rec.reset(n)
	credsDir := b.TempDir()
	for _, node := range nodes {
		path := filepath.Join(credsDir, node+".creds")
		if err := controllerd.RegisterCreds(d.Cfg.Data, node, path, d.Ready.BusURLs, nil); err != nil {
			b.Fatal(err)
		}
		meshtest.StartNode(b, path, b.TempDir(), func(c *agentd.Config) {
			c.Applied = nil
			if memOutbox {
				c.Outbox = agent.NewMemOutbox()
			}
		})
	}
	// Every agent has applied what registration pushed, and it is recorded:
	// 2 minutes, and 50 ms more an agent (5,000 start in about 4).
	limit := 2*time.Minute + time.Duration(n)*50*time.Millisecond
	select {
	case <-all:
	case <-time.After(limit):
		b.Fatalf("the first applies were not all recorded within %v", limit)
	}

	runPushRounds(b, d, rec, n)
}

// percentile is the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (len(sorted)*p + 99) / 100 // ceil(len*p/100)
	return sorted[max(rank, 1)-1]
}
