package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/agent/simruntime"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/controller"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/internal/freeport"
	"meshplane/internal/testwait"
	"meshplane/projections"
)

// These tests run the controller and agents as controllerd.Run and agentd.Run
// in goroutines of the test process: a real embedded NATS server on a free
// port, a real bolt store, the real HTTP API. MESH_TEST_LOG=1 shows their
// logs.

func daemonLogger() *slog.Logger {
	if os.Getenv("MESH_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// testDaemon is one controllerd.Run in a goroutine.
type testDaemon struct {
	cfg    controllerd.Config
	ready  controllerd.Ready
	client *httpapi.Client
	cancel context.CancelFunc
	done   chan error
}

// startDaemon runs a controller on data; busListen "" picks a free port.
func startDaemon(t testing.TB, data, busListen string, edit ...func(*controllerd.Config)) *testDaemon {
	t.Helper()
	if busListen == "" {
		busListen = "127.0.0.1:0"
	}
	readyc := make(chan controllerd.Ready, 1)
	cfg := controllerd.Config{
		Data: data, Listen: "127.0.0.1:0", BusListen: busListen, Interval: time.Hour,
		Logger: daemonLogger(), Ready: func(r controllerd.Ready) { readyc <- r },
	}
	for _, e := range edit {
		e(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &testDaemon{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { d.done <- controllerd.Run(ctx, cfg) }()
	t.Cleanup(func() { d.stop(t) })
	select {
	case d.ready = <-readyc:
	case err := <-d.done:
		d.done <- err
		t.Fatalf("controllerd.Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not serve within 30s")
	}
	c, err := httpapi.NewClient(d.ready.APIURL, d.ready.Token)
	if err != nil {
		t.Fatal(err)
	}
	d.client = c
	return d
}

// stop stops the controller and checks it stopped cleanly; again is a no-op.
func (d *testDaemon) stop(t testing.TB) {
	t.Helper()
	d.cancel()
	select {
	case err, ok := <-d.done:
		if ok && err != nil {
			t.Errorf("controllerd.Run: %v", err)
		}
		if ok {
			close(d.done)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the controller did not stop within 40s")
	}
	if _, err := os.Stat(filepath.Join(d.cfg.Data, "controller.json")); err == nil {
		t.Error("controller.json left behind by a clean stop")
	}
}

// creds writes node's credentials file for d's bus, as `mesh node register
// NAME --creds FILE` does.
func (d *testDaemon) creds(t testing.TB, node string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), node+".creds")
	if err := controllerd.RegisterCreds(d.cfg.Data, node, path, d.ready.BusURLs, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// node is one agentd.Run in a goroutine.
type node struct {
	sim    *simruntime.Runtime
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex
	applied []agent.Report
}

func startNode(t testing.TB, creds, data string, edit ...func(*agentd.Config)) *node {
	t.Helper()
	n := &node{sim: simruntime.New(), done: make(chan error, 1)}
	cfg := agentd.Config{
		Creds: creds, Data: data, Runtime: agentd.RuntimeSim, Interval: time.Hour,
		RetryMax: 100 * time.Millisecond, ReportTimeout: 2 * time.Second,
		Logger: daemonLogger(), Sim: n.sim,
		Applied: func(r agent.Report) { n.mu.Lock(); n.applied = append(n.applied, r); n.mu.Unlock() },
	}
	for _, e := range edit {
		e(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.done <- agentd.Run(ctx, cfg) }()
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *node) stop(t testing.TB) {
	t.Helper()
	n.cancel()
	select {
	case err, ok := <-n.done:
		if ok && err != nil {
			t.Errorf("agentd.Run: %v", err)
		}
		if ok {
			close(n.done)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not stop within 20s")
	}
}

func (n *node) applies() []agent.Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.applied)
}

// inSync waits until every node's status reads in-sync.
func inSync(t testing.TB, c *httpapi.Client, nodes ...string) api.StatusResponse {
	t.Helper()
	var st api.StatusResponse
	testwait.Eventually(t, 30*time.Second, func() error {
		var err error
		if st, err = c.Status(context.Background(), api.StatusRequest{Nodes: nodes}); err != nil {
			return err
		}
		for _, n := range st.Nodes {
			if n.Sync != projections.SyncInSync {
				return errors.New("node " + n.Node + " is " + n.Sync)
			}
		}
		if len(st.Nodes) != len(nodes) {
			return errors.New("status lists " + strconv.Itoa(len(st.Nodes)) + " nodes")
		}
		return nil
	})
	return st
}

// converged waits until every node of nodes is converged: its containers
// have run min_healthy (10 s) since they started, and the agent's check
// after it said so.
func converged(t testing.TB, c *httpapi.Client, nodes ...string) api.StatusResponse {
	t.Helper()
	var st api.StatusResponse
	testwait.Eventually(t, 40*time.Second, func() error {
		var err error
		if st, err = c.Status(context.Background(), api.StatusRequest{Nodes: nodes}); err != nil {
			return err
		}
		for _, n := range st.Nodes {
			if n.Health != projections.HealthConverged {
				return errors.New("node " + n.Node + " is " + n.Health)
			}
		}
		return nil
	})
	return st
}

const testOperator = "alice"

var searxng = events.ModuleSpec{
	Routes:     []string{"searxng.zurag.be"},
	Containers: []events.ContainerSpec{{Name: "searxng", Image: "docker.io/searxng/searxng:2024.9.1"}},
}

// daemonSetUp registers nodes and assigns searxng to each (adopting and taking
// it on the ones in adopt).
func daemonSetUp(t testing.TB, c *httpapi.Client, nodes []string, adopt ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: testOperator, Nodes: nodes}); err != nil {
		t.Fatalf("register: %v", err)
	}
	for _, n := range adopt {
		if _, err := c.AdoptNode(ctx, api.NodeRequest{Operator: testOperator, Node: n}); err != nil {
			t.Fatalf("adopt %s: %v", n, err)
		}
	}
	if _, err := c.DefineModules(ctx, api.DefineModulesRequest{Operator: testOperator,
		Modules: []api.ModuleDefinition{{Module: "searxng", Spec: searxng}}}); err != nil {
		t.Fatalf("define: %v", err)
	}
	for _, n := range nodes {
		if _, err := c.Assign(ctx, api.ModuleNodeRequest{Operator: testOperator, Module: "searxng", Node: n}); err != nil {
			t.Fatalf("assign %s: %v", n, err)
		}
	}
	for _, n := range adopt {
		if _, err := c.Take(ctx, api.ModuleNodeRequest{Operator: testOperator, Module: "searxng", Node: n}); err != nil {
			t.Fatalf("take %s: %v", n, err)
		}
	}
}

// TestDaemonTwoAgentsInSync: a controller and two agents: register (with
// credentials), define, assign, take, push, apply, and the API's status
// shows both nodes in sync, their containers running.
func TestDaemonTwoAgentsInSync(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	daemonSetUp(t, d.client, []string{"n1", "n2"}, "n2")
	agents := map[string]*node{}
	for _, n := range []string{"n1", "n2"} {
		agents[n] = startNode(t, d.creds(t, n), t.TempDir())
	}
	res, err := d.client.Push(context.Background(), api.PushRequest{Operator: testOperator})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if len(res.Pushes) != 2 {
		t.Fatalf("pushed %+v, want both nodes", res.Pushes)
	}
	inSync(t, d.client, "n1", "n2")
	st := converged(t, d.client, "n1", "n2")
	for _, n := range st.Nodes {
		t.Run(n.Node, func(t *testing.T) {
			if n.Health != projections.HealthConverged {
				t.Errorf("health %s, want %s", n.Health, projections.HealthConverged)
			}
			if n.Applied == nil || n.Pushed == nil || n.Applied.Declaration != n.Pushed.Declaration {
				t.Errorf("applied %+v, pushed %+v: want the pushed declaration applied", n.Applied, n.Pushed)
			}
			if _, ok := agents[n.Node].sim.Container("searxng"); !ok {
				t.Errorf("no searxng container on %s's node", n.Node)
			}
		})
	}
	info, err := controllerInfo(d.cfg.Data)
	if err != nil || info != d.ready.Listen {
		t.Errorf("controller.json names %q (%v), want %s", info, err, d.ready.Listen)
	}
}

// TestDaemonLateReportsRecordedOnce: the controller (and its bus) stops
// while an agent goes on applying (its drift check), so its reports wait in
// its outbox; once the controller is back, each is recorded exactly once,
// with report.delivered-late beside it (rule 8).
func TestDaemonLateReportsRecordedOnce(t *testing.T) {
	data := t.TempDir()
	busAt := "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	d := startDaemon(t, data, busAt)
	daemonSetUp(t, d.client, []string{"n1"})
	creds := d.creds(t, "n1")
	n1 := startNode(t, creds, t.TempDir(), func(c *agentd.Config) { c.Interval = 150 * time.Millisecond })
	inSync(t, d.client, "n1")

	d.stop(t)
	// The drift check applies on; the reports are kept.
	kept := func() []string {
		var ids []string
		for _, r := range n1.applies() {
			if r.Kept {
				ids = append(ids, r.Outcome.ApplyID)
			}
		}
		return ids
	}
	testwait.Eventually(t, 30*time.Second, func() error {
		if n := len(kept()); n < 3 {
			return errors.New(strconv.Itoa(n) + " reports kept")
		}
		return nil
	})

	d2 := startDaemon(t, data, busAt)
	queued := kept() // the ones kept before the restart at least
	testwait.Eventually(t, 30*time.Second, func() error {
		page, err := d2.client.Timeline(context.Background(), api.TimelineRequest{Node: "n1", Type: events.TypeReportDeliveredLate, Limit: 1000})
		if err != nil {
			return err
		}
		if len(page.Entries) < len(queued) {
			return errors.New(strconv.Itoa(len(page.Entries)) + " late reports recorded")
		}
		return nil
	})
	n1.stop(t)
	d2.stop(t)

	store, err := boltstore.Open(filepath.Join(data, storeurl.File), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	evs, err := store.ReadStream(context.Background(), events.NodeStream("n1"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	applies, lates := map[string]int{}, map[string]int{}
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeApplyReported:
			applies[ev.ID.String()]++
		case events.TypeReportDeliveredLate:
			lates[ev.Causation]++
		}
	}
	for _, id := range queued {
		if applies[id] != 1 || lates[id] != 1 {
			t.Errorf("apply %s: recorded %d time(s), %d late note(s); want 1 and 1", id, applies[id], lates[id])
		}
	}
}

// TestDaemonOtherNodesCreds: an agent holding n2's credentials can neither
// read n1's declaration nor publish n1's report: the bus refuses, and
// nothing reaches n1's stream. Credentials relabelled as n1's are refused
// before dialling. A report that does not decode is refused and the
// controller goes on recording.
func TestDaemonOtherNodesCreds(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	daemonSetUp(t, d.client, []string{"n1", "n2"})
	credsPath := d.creds(t, "n2")
	creds, err := bus.LoadCreds(credsPath)
	if err != nil {
		t.Fatal(err)
	}
	js := dialAsNode(t, creds)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := storeHead(t, ctx, d.client)

	checkOtherNodeRefused(t, ctx, js, "n2", "n1")
	t.Run("an undecodable report on its own subject", func(t *testing.T) {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		// The bus stores it; the controller refuses it (logged, counted)
		// and goes on.
		if _, err := js.Publish(pctx, bus.ReportSubject("n2"), []byte("{not a report")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("relabelled credentials", func(t *testing.T) {
		forged := creds
		forged.Node = "n1"
		path := filepath.Join(t.TempDir(), "forged.creds")
		if err := os.WriteFile(path, marshal(t, forged), 0o600); err != nil {
			t.Fatal(err)
		}
		err := agentd.Run(ctx, agentd.Config{Creds: path, Data: t.TempDir(), Logger: daemonLogger()})
		if !errors.Is(err, bus.ErrBadCreds) {
			t.Fatalf("agentd.Run with n2's user labelled n1: %v, want ErrBadCreds", err)
		}
	})
	time.Sleep(200 * time.Millisecond) // what was published would be recorded by now
	// Nothing reached n1's stream; the undecodable report is recorded as
	// refused on n2's own stream (issue 17: refused for good, and kept
	// visible), once: the store grew by that one event.
	testwait.Eventually(t, 10*time.Second, func() error {
		if after := storeHead(t, ctx, d.client); after != before+1 {
			return fmt.Errorf("the store grew from %d to %d events, want the one refusal", before, after)
		}
		return nil
	})
	page, err := d.client.Timeline(ctx, api.TimelineRequest{After: before, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.Entries[0].Stream != "node-n2" || page.Entries[0].Type != events.TypeReportRefused {
		t.Fatalf("appended %+v, want one report.refused on node-n2", page.Entries)
	}
	// The controller still records: n2's own agent gets in sync.
	startNode(t, credsPath, t.TempDir())
	inSync(t, d.client, "n2")
}

// TestDaemonAPIToken: a request without the token, or with another, gets
// 401 and appends nothing.
func TestDaemonAPIToken(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	ctx := context.Background()
	before := storeHead(t, ctx, d.client)
	for _, tc := range []struct {
		name, header string
	}{
		{"no token", ""},
		{"another token", "Bearer " + strings.Repeat("0", 64)},
		{"not bearer", "Basic " + d.ready.Token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, d.ready.APIURL+"/v1/nodes",
				strings.NewReader(`{"operator":"mallory","nodes":["evil"]}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", resp.StatusCode)
			}
		})
	}
	bad, err := httpapi.NewClient(d.ready.APIURL, "wrong")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Status(ctx, api.StatusRequest{}); !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Errorf("a read with a wrong token: %v, want ErrUnauthorized", err)
	}
	checkStoreStill(t, ctx, d.client, before)
}

// TestDaemonRefusesToStart: what controllerd.Run and agentd.Run refuse before
// serving.
func TestDaemonRefusesToStart(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"API beyond loopback without TLS", func() error {
			return controllerd.Run(ctx, controllerd.Config{Data: t.TempDir(), Listen: "0.0.0.0:0", Logger: daemonLogger()})
		}, "TLS"},
		{"no data directory", func() error { return controllerd.Run(ctx, controllerd.Config{}) }, "no data directory"},
		{"--nats without creds", func() error {
			return controllerd.Run(ctx, controllerd.Config{Data: t.TempDir(), Listen: "127.0.0.1:0", NATS: []string{"nats://127.0.0.1:1"}, Logger: daemonLogger()})
		}, "--nats-creds"},
		{"docker runtime under a relative root", func() error {
			d := startDaemon(t, t.TempDir(), "")
			return agentd.Run(ctx, agentd.Config{Creds: d.creds(t, "n1"), Data: t.TempDir(), Runtime: agentd.RuntimeDocker, DockerRoot: "relative", Logger: daemonLogger()})
		}, "not absolute"},
		{"unknown runtime", func() error {
			d := startDaemon(t, t.TempDir(), "")
			return agentd.Run(ctx, agentd.Config{Creds: d.creds(t, "n1"), Data: t.TempDir(), Runtime: "podman", Logger: daemonLogger()})
		}, "podman"},
		{"no creds file", func() error {
			return agentd.Run(ctx, agentd.Config{Creds: filepath.Join(t.TempDir(), "none"), Data: t.TempDir(), Logger: daemonLogger()})
		}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
	t.Run("a second agent on the same data", func(t *testing.T) {
		d := startDaemon(t, t.TempDir(), "")
		daemonSetUp(t, d.client, []string{"n1"})
		creds, data := d.creds(t, "n1"), t.TempDir()
		startNode(t, creds, data)
		inSync(t, d.client, "n1")
		err := agentd.Run(ctx, agentd.Config{Creds: creds, Data: data, Logger: daemonLogger()})
		if !errors.Is(err, agentd.ErrDataHeld) {
			t.Fatalf("%v, want agentd.ErrDataHeld", err)
		}
	})
	t.Run("a second controller on the same data", func(t *testing.T) {
		data := t.TempDir()
		startDaemon(t, data, "")
		err := controllerd.Run(ctx, controllerd.Config{Data: data, Listen: "127.0.0.1:0", BusListen: "127.0.0.1:0", Logger: daemonLogger()})
		if !errors.Is(err, controllerd.ErrStoreHeld) {
			t.Fatalf("%v, want controllerd.ErrStoreHeld", err)
		}
	})
}

func controllerInfo(data string) (string, error) {
	info, err := controller.ReadInfo(data)
	return info.Listen, err
}

func agentReportFor(node string) agent.Report {
	return agent.Report{
		Outcome:   events.ApplyReported{Node: node, Declaration: "forged", Sent: 1, Applied: 1, ApplyID: uuid.Must(uuid.NewV7()).String()},
		AppliedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	}
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
