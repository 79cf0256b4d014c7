package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/bus"
	"meshplane/controller"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/events/pgstore"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// clusterCtl is one controller process of a clustered bus: mesh up on a
// shared PostgreSQL store, its embedded server routed to the others'.
type clusterCtl struct {
	*meshtest.CtlProc
	bus string // its bus's client URL
}

// startClusterCtls starts n controllers on db, each with its bus in one
// NATS cluster (--bus-cluster, --bus-peers), all given the trust root in
// trust (--bus-trust), and waits until each serves.
func startClusterCtls(t *testing.T, db, trust string, n int) []*clusterCtl {
	t.Helper()
	routes, buses := make([]string, n), make([]string, n)
	for i := range routes {
		routes[i], buses[i] = freeport.Addr(t), freeport.Addr(t)
	}
	ctls := make([]*clusterCtl, n)
	for i := range ctls {
		var peers []string
		for j, r := range routes {
			if j != i {
				peers = append(peers, "nats-route://"+r)
			}
		}
		data := t.TempDir()
		p := meshtest.StartProc(t, nil, "up", "--data", data, "--store", db, "--listen", "127.0.0.1:0",
			"--bus-listen", buses[i], "--bus-cluster", routes[i], "--bus-peers", strings.Join(peers, ","),
			"--bus-trust", trust, "--interval", "1h")
		ctls[i] = &clusterCtl{CtlProc: &meshtest.CtlProc{Proc: p, Data: data}, bus: "nats://" + buses[i]}
	}
	for _, c := range ctls {
		testwait.Eventually(t, 60*time.Second, func() error {
			select {
			case <-c.Done:
				t.Fatalf("a controller exited: %v\n%s", c.Err, c.Out)
			default:
			}
			info, err := controller.ReadInfo(c.Data)
			if err != nil {
				return err
			}
			if info.PID != c.Cmd.Process.Pid {
				return errors.New("controller.json is another process's")
			}
			c.URL = info.URL
			return nil
		})
		tok, err := os.ReadFile(filepath.Join(c.Data, "api-token"))
		if err != nil {
			t.Fatal(err)
		}
		c.Token = strings.TrimSpace(string(tok))
	}
	return ctls
}

// role is c's role as `mesh info` says ("" if it does not answer).
func (c *clusterCtl) role(t *testing.T) string {
	t.Helper()
	code, out, _ := meshtest.CLI(t, []string{"MESH_SERVER=" + c.URL, "MESH_TOKEN=" + c.Token}, "info", "-o", "json")
	if code != meshtest.ExitOK {
		return ""
	}
	var info api.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return ""
	}
	return info.Role
}

// TestClusterFailover is issue 19's test of a bus that outlives its
// controller: three controllers on one PostgreSQL, their embedded servers
// one NATS cluster (the bucket and the stream R3), six agents spread over
// the three buses (two each, each agent's credentials naming its own
// server: it learns the others from the cluster). During a push to every
// node, the leader (its controller and its server) is killed with
// SIGKILL: a standby leads within 10 s, every agent's report of that push
// and of the next is recorded by the new leader, none is lost or recorded
// twice, and the agents of the dead server reconnect to another without a
// restart.
func TestClusterFailover(t *testing.T) {
	db := meshtest.PgDatabase(t)
	// The trust root, made once and given to every controller: a copy of
	// the first controller's DATA/bus seeds, as an operator would make.
	trustData := t.TempDir()
	trust := filepath.Join(trustData, "bus")
	if _, err := bus.LoadAuthority(trust); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	ctls := startClusterCtls(t, db, trust, 3)
	t.Logf("three clustered controllers serve %v after their start", time.Since(started).Round(time.Millisecond))

	var leader *clusterCtl
	testwait.Eventually(t, 20*time.Second, func() error {
		leaders := 0
		for _, c := range ctls {
			if c.role(t) == api.RoleLeader {
				leader = c
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d leader(s)", leaders)
		}
		return nil
	})
	env := leader.Env()
	env[2] = "MESH_DATA=" + trustData // node register --creds mints from the trust root

	// Every controller's DATA/bus-urls names the servers its own knew
	// when it started serving: its own and at least one peer (a majority
	// was routed: its JetStream had a leader).
	for _, c := range ctls {
		urls, err := controllerd.ReadBusURLs(c.Data)
		if err != nil || len(urls) < 2 || urls[0] != c.bus {
			t.Errorf("%s/bus-urls: %v, %v; want its own bus %s first and a peer's", c.Data, urls, err, c.bus)
		}
	}

	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	home := map[string]*clusterCtl{}
	dir := t.TempDir()
	agents := map[string]*meshtest.Proc{}
	for i, n := range nodes {
		home[n] = ctls[i%3]
		creds := filepath.Join(dir, n+".creds")
		meshtest.MustCLI(t, env, "node", "register", n, "--creds", creds, "--bus-url", home[n].bus)
		meshtest.MustCLI(t, env, "node", "adopt", n)
	}
	meshtest.MustCLI(t, env, "module", "define", "../examples/modules/searxng.yaml")
	for _, n := range nodes {
		meshtest.MustCLI(t, env, "assign", "searxng", n)
		meshtest.MustCLI(t, env, "take", "searxng", n)
		agents[n] = meshtest.StartAgentProc(t, filepath.Join(dir, n+".creds"), t.TempDir())
	}
	meshtest.MustCLI(t, env, "push")
	meshtest.ProcInSync(t, env, nodes...)

	s, err := pgstore.Open(context.Background(), db, pgstore.WithoutMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Each node's reports are counted in the store: a push of an
	// unchanged declaration is applied and reported again (unchanged).
	base := reportCounts(t, s)
	reported := func(what string, more int) {
		testwait.Eventually(t, 30*time.Second, func() error {
			got := reportCounts(t, s)
			for _, n := range nodes {
				if got[n] < base[n]+more {
					return fmt.Errorf("%s: node %s: %d report(s) recorded, want %d", what, n, got[n], base[n]+more)
				}
			}
			return nil
		})
	}

	// A push to every node, and the leader killed while its reports come.
	meshtest.MustCLI(t, env, "push")
	if err := leader.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-leader.Done
	var standbys []*clusterCtl
	for _, c := range ctls {
		if c != leader {
			standbys = append(standbys, c)
		}
	}
	var next *clusterCtl
	for next == nil {
		for _, c := range standbys {
			if c.role(t) == api.RoleLeader {
				next = c
			}
		}
		if next == nil && time.Since(killed) > 10*time.Second {
			t.Fatalf("no standby leads within 10s of the leader's SIGKILL:\n%s\n%s", standbys[0].Out, standbys[1].Out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("a standby leads %v after the leader's SIGKILL", time.Since(killed).Round(time.Millisecond))
	env = next.Env()
	env[2] = "MESH_DATA=" + trustData

	// Every node's report of the push the leader died in is recorded, and
	// so is the next push's, by the new leader (the agents of the dead
	// server among them: they reconnected to another on their own).
	reported("the push the leader died in", 1)
	t.Logf("every node's report of the push recorded %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	meshtest.MustCLI(t, env, "push")
	reported("the next push", 2)
	t.Logf("and of the next push %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	meshtest.ProcInSync(t, env, nodes...)

	for n, a := range agents {
		select {
		case <-a.Done:
			t.Errorf("agent %s exited: %v\n%s", n, a.Err, a.Out)
		default:
		}
		if home[n] == leader && !strings.Contains(a.Out.String(), "reconnected") {
			t.Errorf("agent %s of the dead server does not say it reconnected:\n%s", n, a.Out)
		}
	}

	// No apply recorded twice: the apply id is the event's id, and every
	// report's is its own.
	evs, err := s.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == events.TypeApplyReported {
			if ids[ev.ID.String()] {
				t.Errorf("apply %s recorded twice", ev.ID)
			}
			ids[ev.ID.String()] = true
		}
	}
	if got, want := reportCounts(t, s), base; true {
		for _, n := range nodes {
			if got[n] > want[n]+3 {
				t.Errorf("node %s: %d reports after two pushes, from %d: a report recorded twice?", n, got[n], want[n])
			}
		}
	}
}

// reportCounts counts each node's apply.reported events in s.
func reportCounts(t *testing.T, s *pgstore.Store) map[string]int {
	t.Helper()
	evs, err := s.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		if ev.Type == events.TypeApplyReported {
			n[strings.TrimPrefix(ev.Stream, "node-")]++
		}
	}
	return n
}
