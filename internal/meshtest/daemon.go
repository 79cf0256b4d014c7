package meshtest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/agent/simruntime"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/controller"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/internal/testwait"
	"meshplane/projections"
)

func DaemonLogger() *slog.Logger {
	if os.Getenv("MESH_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestDaemon is one controllerd.Run in a goroutine.
type TestDaemon struct {
	Cfg    controllerd.Config
	Ready  controllerd.Ready
	Client *httpapi.Client
	Cancel context.CancelFunc
	Done   chan error
}

// StartDaemon runs a controller on data; busListen "" picks a free port.
func StartDaemon(t testing.TB, data, busListen string, edit ...func(*controllerd.Config)) *TestDaemon {
	t.Helper()
	if busListen == "" {
		busListen = "127.0.0.1:0"
	}
	readyc := make(chan controllerd.Ready, 1)
	cfg := controllerd.Config{
		Data: data, Listen: "127.0.0.1:0", BusListen: busListen, Interval: time.Hour,
		Logger: DaemonLogger(), Ready: func(r controllerd.Ready) { readyc <- r },
	}
	for _, e := range edit {
		e(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &TestDaemon{Cfg: cfg, Cancel: cancel, Done: make(chan error, 1)}
	go func() { d.Done <- controllerd.Run(ctx, cfg) }()
	t.Cleanup(func() { d.Stop(t) })
	select {
	case d.Ready = <-readyc:
	case err := <-d.Done:
		d.Done <- err
		t.Fatalf("controllerd.Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not serve within 30s")
	}
	c, err := httpapi.NewClient(d.Ready.APIURL, d.Ready.Token)
	if err != nil {
		t.Fatal(err)
	}
	d.Client = c
	return d
}

// Stop stops the controller and checks it stopped cleanly; again is a no-op.
func (d *TestDaemon) Stop(t testing.TB) {
	t.Helper()
	d.Cancel()
	select {
	case err, ok := <-d.Done:
		if ok && err != nil {
			t.Errorf("controllerd.Run: %v", err)
		}
		if ok {
			close(d.Done)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the controller did not stop within 40s")
	}
	if _, err := os.Stat(filepath.Join(d.Cfg.Data, "controller.json")); err == nil {
		t.Error("controller.json left behind by a clean stop")
	}
}

// Creds writes node's credentials file for d's bus, as `mesh node register
// NAME --creds FILE` does.
func (d *TestDaemon) Creds(t testing.TB, node string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), node+".creds")
	if err := controllerd.RegisterCreds(d.Cfg.Data, node, path, d.Ready.BusURLs, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// Node is one agentd.Run in a goroutine.
type Node struct {
	Sim    *simruntime.Runtime
	Cancel context.CancelFunc
	Done   chan error

	Mu      sync.Mutex
	Applied []agent.Report
}

func StartNode(t testing.TB, creds, data string, edit ...func(*agentd.Config)) *Node {
	t.Helper()
	n := &Node{Sim: simruntime.New(), Done: make(chan error, 1)}
	cfg := agentd.Config{
		Creds: creds, Data: data, Runtime: agentd.RuntimeSim, Interval: time.Hour,
		RetryMax: 100 * time.Millisecond, ReportTimeout: 2 * time.Second,
		Logger: DaemonLogger(), Sim: n.Sim,
		Applied: func(r agent.Report) { n.Mu.Lock(); n.Applied = append(n.Applied, r); n.Mu.Unlock() },
	}
	for _, e := range edit {
		e(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.Cancel = cancel
	go func() { n.Done <- agentd.Run(ctx, cfg) }()
	t.Cleanup(func() { n.Stop(t) })
	return n
}

func (n *Node) Stop(t testing.TB) {
	t.Helper()
	n.Cancel()
	select {
	case err, ok := <-n.Done:
		if ok && err != nil {
			t.Errorf("agentd.Run: %v", err)
		}
		if ok {
			close(n.Done)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not stop within 20s")
	}
}

func (n *Node) Applies() []agent.Report {
	n.Mu.Lock()
	defer n.Mu.Unlock()
	return slices.Clone(n.Applied)
}

// InSync waits until every node's status reads in-sync.
func InSync(t testing.TB, c *httpapi.Client, nodes ...string) api.StatusResponse {
	t.Helper()
	return waitStatus(t, c, 30*time.Second, nodes, func(n api.NodeStatus) string {
		return is(n.Sync, projections.SyncInSync)
	})
}

// Converged waits until every node of nodes is converged: its containers
// have run min_healthy (10 s) since they started, and the agent's check
// after it said so.
func Converged(t testing.TB, c *httpapi.Client, nodes ...string) api.StatusResponse {
	t.Helper()
	return waitStatus(t, c, 40*time.Second, nodes, func(n api.NodeStatus) string {
		return is(n.Health, projections.HealthConverged)
	})
}

// is is "" when got is want, else got: what waitStatus says of a node.
func is(got, want string) string {
	if got == want {
		return ""
	}
	return got
}

// waitStatus waits, within d, until status lists every node of nodes and
// not says "" of each; not says what a node is instead.
func waitStatus(t testing.TB, c *httpapi.Client, d time.Duration, nodes []string, not func(api.NodeStatus) string) api.StatusResponse {
	t.Helper()
	var st api.StatusResponse
	testwait.Eventually(t, d, func() error {
		var err error
		if st, err = c.Status(context.Background(), api.StatusRequest{Nodes: nodes}); err != nil {
			return err
		}
		for _, n := range st.Nodes {
			if s := not(n); s != "" {
				return errors.New("node " + n.Node + " is " + s)
			}
		}
		if len(st.Nodes) != len(nodes) {
			return errors.New("status lists " + strconv.Itoa(len(st.Nodes)) + " nodes")
		}
		return nil
	})
	return st
}

const TestOperator = "alice"

// DaemonSetUp registers nodes and assigns searxng to each (adopting and taking
// it on the ones in adopt).
func DaemonSetUp(t testing.TB, c *httpapi.Client, nodes []string, adopt ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: TestOperator, Nodes: nodes}); err != nil {
		t.Fatalf("register: %v", err)
	}
	for _, n := range adopt {
		if _, err := c.AdoptNode(ctx, api.NodeRequest{Operator: TestOperator, Node: n}); err != nil {
			t.Fatalf("adopt %s: %v", n, err)
		}
	}
	if _, err := c.DefineModules(ctx, api.DefineModulesRequest{Operator: TestOperator,
		Modules: []api.ModuleDefinition{{Module: "searxng", Spec: Searxng}}}); err != nil {
		t.Fatalf("define: %v", err)
	}
	for _, n := range nodes {
		if _, err := c.Assign(ctx, api.ModuleNodeRequest{Operator: TestOperator, Module: "searxng", Node: n}); err != nil {
			t.Fatalf("assign %s: %v", n, err)
		}
	}
	for _, n := range adopt {
		if _, err := c.Take(ctx, api.ModuleNodeRequest{Operator: TestOperator, Module: "searxng", Node: n}); err != nil {
			t.Fatalf("take %s: %v", n, err)
		}
	}
}

func ControllerInfo(data string) (string, error) {
	info, err := controller.ReadInfo(data)
	return info.Listen, err
}

func AgentReportFor(node string) agent.Report {
	return agent.Report{
		Outcome:   events.ApplyReported{Node: node, Declaration: "forged", Sent: 1, Applied: 1, ApplyID: uuid.Must(uuid.NewV7()).String()},
		AppliedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	}
}

func Marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Searxng is the example module the in-process daemon tests define.
var Searxng = events.ModuleSpec{
	Routes:     []string{"searxng.zurag.be"},
	Containers: []events.ContainerSpec{{Name: "searxng", Image: "docker.io/searxng/searxng:2024.9.1"}},
}
