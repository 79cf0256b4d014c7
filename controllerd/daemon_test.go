package controllerd_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
	"meshplane/projections"
)

// These tests run the controller and agents as controllerd.Run and agentd.Run
// in goroutines of the test process: a real embedded NATS server on a free
// port, a real bolt store, the real HTTP API. MESH_TEST_LOG=1 shows their
// logs.

// TestDaemonTwoAgentsInSync: a controller and two agents: register (with
// credentials), define, assign, take, push, apply, and the API's status
// shows both nodes in sync, their containers running.
func TestDaemonTwoAgentsInSync(t *testing.T) {
	d := meshtest.StartDaemon(t, t.TempDir(), "")
	meshtest.DaemonSetUp(t, d.Client, []string{"n1", "n2"}, "n2")
	agents := map[string]*meshtest.Node{}
	for _, n := range []string{"n1", "n2"} {
		agents[n] = meshtest.StartNode(t, d.Creds(t, n), t.TempDir())
	}
	res, err := d.Client.Push(context.Background(), api.PushRequest{Operator: meshtest.TestOperator})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if len(res.Pushes) != 2 {
		t.Fatalf("pushed %+v, want both nodes", res.Pushes)
	}
	meshtest.InSync(t, d.Client, "n1", "n2")
	st := meshtest.Converged(t, d.Client, "n1", "n2")
	for _, n := range st.Nodes {
		t.Run(n.Node, func(t *testing.T) {
			if n.Health != projections.HealthConverged {
				t.Errorf("health %s, want %s", n.Health, projections.HealthConverged)
			}
			if n.Applied == nil || n.Pushed == nil || n.Applied.Declaration != n.Pushed.Declaration {
				t.Errorf("applied %+v, pushed %+v: want the pushed declaration applied", n.Applied, n.Pushed)
			}
			if _, ok := agents[n.Node].Sim.Container("searxng"); !ok {
				t.Errorf("no searxng container on %s's node", n.Node)
			}
		})
	}
	info, err := meshtest.ControllerInfo(d.Cfg.Data)
	if err != nil || info != d.Ready.Listen {
		t.Errorf("controller.json names %q (%v), want %s", info, err, d.Ready.Listen)
	}
}

// TestDaemonLateReportsRecordedOnce: the controller (and its bus) stops
// while an agent goes on applying (its drift check), so its reports wait in
// its outbox; once the controller is back, each is recorded exactly once,
// with report.delivered-late beside it (rule 8).
func TestDaemonLateReportsRecordedOnce(t *testing.T) {
	data := t.TempDir()
	busAt := "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	d := meshtest.StartDaemon(t, data, busAt)
	meshtest.DaemonSetUp(t, d.Client, []string{"n1"})
	creds := d.Creds(t, "n1")
	n1 := meshtest.StartNode(t, creds, t.TempDir(), func(c *agentd.Config) { c.Interval = 150 * time.Millisecond })
	meshtest.InSync(t, d.Client, "n1")

	d.Stop(t)
	// The drift check applies on; the reports are kept.
	kept := func() []string {
		var ids []string
		for _, r := range n1.Applies() {
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

	d2 := meshtest.StartDaemon(t, data, busAt)
	queued := kept() // the ones kept before the restart at least
	testwait.Eventually(t, 30*time.Second, func() error {
		page, err := d2.Client.Timeline(context.Background(), api.TimelineRequest{Node: "n1", Type: events.TypeReportDeliveredLate, Limit: 1000})
		if err != nil {
			return err
		}
		if len(page.Entries) < len(queued) {
			return errors.New(strconv.Itoa(len(page.Entries)) + " late reports recorded")
		}
		return nil
	})
	n1.Stop(t)
	d2.Stop(t)

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
	d := meshtest.StartDaemon(t, t.TempDir(), "")
	meshtest.DaemonSetUp(t, d.Client, []string{"n1", "n2"})
	credsPath := d.Creds(t, "n2")
	creds, err := bus.LoadCreds(credsPath)
	if err != nil {
		t.Fatal(err)
	}
	js := meshtest.DialAsNode(t, creds)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := meshtest.StoreHead(t, ctx, d.Client)

	meshtest.CheckOtherNodeRefused(t, ctx, js, "n2", "n1")
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
		if err := os.WriteFile(path, meshtest.Marshal(t, forged), 0o600); err != nil {
			t.Fatal(err)
		}
		err := agentd.Run(ctx, agentd.Config{Creds: path, Data: t.TempDir(), Logger: meshtest.DaemonLogger()})
		if !errors.Is(err, bus.ErrBadCreds) {
			t.Fatalf("agentd.Run with n2's user labelled n1: %v, want ErrBadCreds", err)
		}
	})
	time.Sleep(200 * time.Millisecond) // what was published would be recorded by now
	// Nothing reached n1's stream; the undecodable report is recorded as
	// refused on n2's own stream (issue 17: refused for good, and kept
	// visible), once: the store grew by that one event.
	testwait.Eventually(t, 10*time.Second, func() error {
		if after := meshtest.StoreHead(t, ctx, d.Client); after != before+1 {
			return fmt.Errorf("the store grew from %d to %d events, want the one refusal", before, after)
		}
		return nil
	})
	page, err := d.Client.Timeline(ctx, api.TimelineRequest{After: before, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.Entries[0].Stream != "node-n2" || page.Entries[0].Type != events.TypeReportRefused {
		t.Fatalf("appended %+v, want one report.refused on node-n2", page.Entries)
	}
	// The controller still records: n2's own agent gets in sync.
	meshtest.StartNode(t, credsPath, t.TempDir())
	meshtest.InSync(t, d.Client, "n2")
}

// TestDaemonAPIToken: a request without the token, or with another, gets
// 401 and appends nothing.
func TestDaemonAPIToken(t *testing.T) {
	d := meshtest.StartDaemon(t, t.TempDir(), "")
	ctx := context.Background()
	before := meshtest.StoreHead(t, ctx, d.Client)
	for _, tc := range []struct {
		name, header string
	}{
		{"no token", ""},
		{"another token", "Bearer " + strings.Repeat("0", 64)},
		{"not bearer", "Basic " + d.Ready.Token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, d.Ready.APIURL+"/v1/nodes",
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
	bad, err := httpapi.NewClient(d.Ready.APIURL, "wrong")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Status(ctx, api.StatusRequest{}); !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Errorf("a read with a wrong token: %v, want ErrUnauthorized", err)
	}
	meshtest.CheckStoreStill(t, ctx, d.Client, before)
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
			return controllerd.Run(ctx, controllerd.Config{Data: t.TempDir(), Listen: "0.0.0.0:0", Logger: meshtest.DaemonLogger()})
		}, "TLS"},
		{"no data directory", func() error { return controllerd.Run(ctx, controllerd.Config{}) }, "no data directory"},
		{"--nats without creds", func() error {
			return controllerd.Run(ctx, controllerd.Config{Data: t.TempDir(), Listen: "127.0.0.1:0", NATS: []string{"nats://127.0.0.1:1"}, Logger: meshtest.DaemonLogger()})
		}, "--nats-creds"},
		{"docker runtime under a relative root", func() error {
			d := meshtest.StartDaemon(t, t.TempDir(), "")
			return agentd.Run(ctx, agentd.Config{Creds: d.Creds(t, "n1"), Data: t.TempDir(), Runtime: agentd.RuntimeDocker, DockerRoot: "relative", Logger: meshtest.DaemonLogger()})
		}, "not absolute"},
		{"unknown runtime", func() error {
			d := meshtest.StartDaemon(t, t.TempDir(), "")
			return agentd.Run(ctx, agentd.Config{Creds: d.Creds(t, "n1"), Data: t.TempDir(), Runtime: "podman", Logger: meshtest.DaemonLogger()})
		}, "podman"},
		{"no creds file", func() error {
			return agentd.Run(ctx, agentd.Config{Creds: filepath.Join(t.TempDir(), "none"), Data: t.TempDir(), Logger: meshtest.DaemonLogger()})
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
		d := meshtest.StartDaemon(t, t.TempDir(), "")
		meshtest.DaemonSetUp(t, d.Client, []string{"n1"})
		creds, data := d.Creds(t, "n1"), t.TempDir()
		meshtest.StartNode(t, creds, data)
		meshtest.InSync(t, d.Client, "n1")
		err := agentd.Run(ctx, agentd.Config{Creds: creds, Data: data, Logger: meshtest.DaemonLogger()})
		if !errors.Is(err, agentd.ErrDataHeld) {
			t.Fatalf("%v, want agentd.ErrDataHeld", err)
		}
	})
	t.Run("a second controller on the same data", func(t *testing.T) {
		data := t.TempDir()
		meshtest.StartDaemon(t, data, "")
		err := controllerd.Run(ctx, controllerd.Config{Data: data, Listen: "127.0.0.1:0", BusListen: "127.0.0.1:0", Logger: meshtest.DaemonLogger()})
		if !errors.Is(err, controllerd.ErrStoreHeld) {
			t.Fatalf("%v, want controllerd.ErrStoreHeld", err)
		}
	})
}
