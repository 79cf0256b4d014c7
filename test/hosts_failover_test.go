package test

// Issue 19's "the leader's link goes down" across hosts: PostgreSQL on a
// host of the private link, three controllers on hosts of their own (one
// store, one clustered bus), three agents joined with tokens; the leader's
// host loses its link (a partition, not a kill). And the time from `mesh
// agent join` to the first report recorded, with one controller.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/bus"
	"meshplane/events"
	"meshplane/events/pgstore"
	"meshplane/events/pgstore/pgtest"
	"meshplane/internal/hosttest"
	"meshplane/internal/meshtest"
	"meshplane/internal/testtls"
	"meshplane/internal/testwait"
)

const hostsRoutePort = 6222 // a controller's --bus-cluster port on its host

// hostsPostgres starts a throwaway PostgreSQL inside host h (listening on
// its address only) and returns a new database's URLs: over TCP on the
// link, for the controllers, and over the Unix socket, for the test.
func hostsPostgres(t *testing.T, h *hosttest.Host) (tcpURL, localURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgtest.StartWith(ctx, pgtest.Options{Listen: h.Addr().String(), Port: 5432, Wrap: []string{"ip", "netns", "exec", h.Name()}})
	if err != nil {
		if errors.Is(err, pgtest.ErrNoPostgres) && !pgtest.InCI() {
			t.Skipf("pgtest: SKIPPED: %v", err)
		}
		t.Fatalf("PostgreSQL on %s: %v", h, err)
	}
	t.Cleanup(func() { srv.Close() }) // before the namespaces go (cleanups run last first)
	localURL, err = srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(localURL)
	if err != nil {
		t.Fatal(err)
	}
	return srv.TCPURL(strings.TrimPrefix(u.Path, "/")), localURL
}

// hostsCtl is one of several controllers, each on a host of its own.
type hostsCtl struct {
	*hostsMesh // its view: its host, process, data, URL and token
}

// role is the controller's role as `mesh info` says, asked from its own
// host ("" when it does not answer).
func (c *hostsCtl) role(t testing.TB) string {
	code, out, _ := c.cli(t, c.ctl, "info", "-o", "json")
	if code != meshtest.ExitOK {
		return ""
	}
	var info api.Info
	if json.Unmarshal([]byte(out), &info) != nil {
		return ""
	}
	return info.Role
}

// TestHostsFailover: PostgreSQL on host 0, three controllers on hosts 1-3
// (their buses one NATS cluster, TLS from one private CA), three agents on
// hosts 4-6 joined with tokens through the leader. During a push to every
// node, the leader's link goes down: a standby leads within 30 s (the
// store frees the partitioned leader's lock within
// pgstore.LeaderSessionBound, the partitioned leader steps down on its
// own), every agent's report of that push and of the next is recorded
// exactly once, and the agents on the partitioned leader's server (a1 at
// least: its credentials name that server alone) reconnect to another
// server, the same processes, without a restart.
func TestHostsFailover(t *testing.T) {
	began := time.Now()
	nt := hosttest.New(t, 7)
	bin := meshtest.Binary(t)
	dbURL, localURL := hostsPostgres(t, nt.Host(0))

	ctlHosts := []*hosttest.Host{nt.Host(1), nt.Host(2), nt.Host(3)}
	var names []string
	for _, h := range ctlHosts {
		names = append(names, h.Addr().String())
	}
	pki := testtls.New(t, names...)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pki.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// One trust root for every controller, as TestClusterFailover makes it.
	trust := filepath.Join(t.TempDir(), "bus")
	if _, err := bus.LoadAuthority(trust); err != nil {
		t.Fatal(err)
	}
	ctls := make([]*hostsCtl, len(ctlHosts))
	for i, h := range ctlHosts {
		var peers []string
		for j, o := range ctlHosts {
			if j != i {
				peers = append(peers, "nats-route://"+o.AddrPort(hostsRoutePort))
			}
		}
		c := &hostsCtl{&hostsMesh{net: nt, ctl: h, data: t.TempDir(), caFile: caFile, url: "https://" + h.AddrPort(hostsAPIPort)}}
		c.proc = h.Start(t, []string{"MESH_SERVER=", "MESH_TOKEN="}, bin, "up", "--data", c.data, "--store", dbURL,
			"--listen", h.AddrPort(hostsAPIPort), "--bus-listen", h.AddrPort(hostsBusPort),
			"--bus-cluster", h.AddrPort(hostsRoutePort), "--bus-peers", strings.Join(peers, ","), "--bus-trust", trust,
			"--tls-cert", pki.CertFile, "--tls-key", pki.KeyFile, "--tls-ca", caFile, "--interval", "1h")
		ctls[i] = c
	}
	for _, c := range ctls {
		testwait.Eventually(t, 60*time.Second, func() error {
			if exited, err := c.proc.Exited(); exited {
				t.Fatalf("the controller on %s exited: %v\n%s", c.ctl, err, c.proc.Output())
			}
			if !strings.Contains(c.proc.Output(), "controller: API ") {
				return fmt.Errorf("the controller on %s does not serve yet", c.ctl)
			}
			return nil
		})
		tok, err := httpapi.ReadToken(filepath.Join(c.data, httpapi.TokenFile))
		if err != nil {
			t.Fatal(err)
		}
		c.token = tok
	}
	var leader *hostsCtl
	testwait.Eventually(t, 30*time.Second, func() error {
		leader = nil
		n := 0
		for _, c := range ctls {
			if c.role(t) == api.RoleLeader {
				leader, n = c, n+1
			}
		}
		if n != 1 {
			return fmt.Errorf("%d leader(s)", n)
		}
		return nil
	})
	t.Logf("three controllers serve, one leads, %.1f s after the start", time.Since(began).Seconds())

	nodes := []string{"a1", "a2", "a3"}
	agents := map[string]*hostAgent{}
	for i, n := range nodes[1:] {
		agents[n] = leader.startAgent(t, nt.Host(5+i), n, "--interval", "10m")
	}
	// a1's credentials name the leader's server alone, so that one agent
	// at least is on the server whose link goes down (a NATS client picks
	// one of its URLs at random); it learns the others from the cluster,
	// as every NATS client does.
	agents["a1"] = startAgentOn(t, leader, nt.Host(4), "a1", leader.ctl.Addr().String())
	leader.mustCLI(t, leader.ctl, "module", "define", hostsModule(t, "motd"))
	for _, n := range nodes {
		leader.mustCLI(t, leader.ctl, "assign", "motd", n)
	}
	leader.mustCLI(t, leader.ctl, "push")
	inSync := func(c *hostsCtl, within time.Duration) {
		t.Helper()
		for _, n := range nodes {
			testwait.Eventually(t, within, func() error {
				st := c.status(t, c.ctl, n)
				if st.Pushed == nil || st.Applied == nil || st.Applied.Declaration != st.Pushed.Declaration {
					return fmt.Errorf("%s: pushed %+v, applied %+v", n, st.Pushed, st.Applied)
				}
				return nil
			})
		}
	}
	inSync(leader, 45*time.Second)
	t.Logf("three agents in sync %.1f s after the start", time.Since(began).Seconds())

	s, err := pgstore.Open(context.Background(), localURL, pgstore.WithoutMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := reportCounts(t, s)
	reported := func(what string, more int, within time.Duration) {
		t.Helper()
		testwait.Eventually(t, within, func() error {
			got := reportCounts(t, s)
			for _, n := range nodes {
				if got[n] < base[n]+more {
					return fmt.Errorf("%s: node %s: %d report(s) recorded, want %d", what, n, got[n], base[n]+more)
				}
			}
			return nil
		})
	}

	// The fault: a push to every node, and the leader's link pulled as its
	// reports come.
	leader.mustCLI(t, leader.ctl, "push")
	onLeader := map[string]*hostAgent{} // the agents on the leader's server as its link goes down
	for n, a := range agents {
		if u := lastBusURL(a.proc.Output()); strings.Contains(u, "//"+leader.ctl.Addr().String()+":") {
			onLeader[n] = a
		}
	}
	if onLeader["a1"] == nil {
		t.Fatalf("a1, whose credentials name the leader's server alone, is on %q", lastBusURL(agents["a1"].proc.Output()))
	}
	outAtCut := map[string]int{}
	for n, a := range agents {
		outAtCut[n] = len(a.proc.Output())
	}
	leader.ctl.LinkDown()
	cut := time.Now()
	defer leader.ctl.LinkUp() // harmless twice
	var next *hostsCtl
	for next == nil {
		for _, c := range ctls {
			if c != leader && c.role(t) == api.RoleLeader {
				next = c
			}
		}
		if next == nil && time.Since(cut) > 30*time.Second {
			t.Fatalf("no standby leads within 30 s of the leader's link going down")
		}
		if next == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	failover := time.Since(cut)
	t.Logf("failover: a standby leads %.1f s after the leader's link went down", failover.Seconds())
	reported("the push the link went down in", 1, 45*time.Second)
	following := time.Since(cut)
	t.Logf("failover with agents following: every agent's report of that push recorded %.1f s after the link went down", following.Seconds())
	// The partitioned leader stepped down by itself (its store's session
	// failed its check), link still down.
	testwait.Eventually(t, 30*time.Second, func() error {
		if !strings.Contains(leader.proc.Output(), "lost the store's leader lock") {
			return errors.New("the partitioned leader does not say it lost the store's leader lock")
		}
		return nil
	})
	stepDown := time.Since(cut)
	next.mustCLI(t, next.ctl, "push")
	reported("the next push", 2, 45*time.Second)
	inSync(next, 45*time.Second)
	t.Logf("the next push recorded %.1f s after the link went down (the old leader knew it lost its lock by %.1f s at most)", time.Since(cut).Seconds(), stepDown.Seconds())

	// The agents on the partitioned server reconnected to another one,
	// the same processes (each agent is one process the test started and
	// none exited), and their reports
	// of both pushes were recorded (above), by the new leader for the
	// second: the old one had stepped down.
	for n, a := range agents {
		if exited, err := a.proc.Exited(); exited {
			t.Errorf("agent %s exited: %v\n%s", n, err, a.proc.Output())
		}
	}
	for n, a := range onLeader {
		after := a.proc.Output()[outAtCut[n]:]
		u := lastBusURL(after)
		if !strings.Contains(after, "bus: reconnected") || u == "" || strings.Contains(u, "//"+leader.ctl.Addr().String()+":") {
			t.Errorf("agent %s, on the partitioned leader's server, did not reconnect to another (last bus URL after the cut: %q)\n%s", n, u, after)
		} else {
			t.Logf("agent %s, on the partitioned leader's server, reconnected to %s", n, u)
		}
	}
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
	for n, c := range reportCounts(t, s) {
		if c > base[n]+2 {
			t.Errorf("node %s: %d reports after two pushes, from %d: a report recorded twice?", n, c, base[n])
		}
	}
	fmt.Printf("BENCH hosts-failover leads=%.2fs following=%.2fs\n", failover.Seconds(), following.Seconds())
	t.Logf("the whole test: %.1f s", time.Since(began).Seconds())
}

// TestHostsJoinToFirstReport measures, with one controller on a private
// link (TestHostsOnAPrivateLink's setting), the time from `mesh agent join`
// on a host to the first report of that host recorded: the join, the
// agent's start, and its apply of the declaration pushed to it.
func TestHostsJoinToFirstReport(t *testing.T) {
	m := startHostsMesh(t, 1)
	m.mustCLI(t, m.ctl, "module", "define", hostsModule(t, "motd"))
	h := m.net.Host(1)
	token := strings.TrimSpace(m.mustCLI(t, m.ctl, "node", "join-token", "j1"))
	m.mustCLI(t, m.ctl, "assign", "motd", "j1")
	data := t.TempDir()
	start := time.Now()
	m.mustCLI(t, h, "agent", "join", m.url, "--token", token, "--data", data, "--no-start")
	joined := time.Since(start)
	h.Start(t, []string{"MESH_SERVER=", "MESH_TOKEN=", "MESH_DATA="}, meshtest.Binary(t), "agent", "--data", data, "--runtime", "sim", "--interval", "10m")
	m.mustCLI(t, m.ctl, "push", "j1")
	testwait.Eventually(t, 30*time.Second, func() error {
		if st := m.status(t, m.ctl, "j1"); st.Applied == nil {
			return errors.New("j1: no apply recorded yet")
		}
		return nil
	})
	first := time.Since(start)
	t.Logf("join to first report recorded: %.2f s (the join itself %.2f s)", first.Seconds(), joined.Seconds())
	fmt.Printf("BENCH hosts-join first-report=%.2fs join=%.2fs\n", first.Seconds(), joined.Seconds())
}

// startAgentOn joins host h as node through c, keeps in its credentials
// only the bus URLs on the host at addr, and starts its agent.
func startAgentOn(t *testing.T, c *hostsCtl, h *hosttest.Host, node, addr string) *hostAgent {
	t.Helper()
	a := &hostAgent{host: h, node: node, data: t.TempDir()}
	args, env := c.joinHost(t, h, node, a.data)
	path := filepath.Join(a.data, "node.creds")
	creds, err := bus.LoadCreds(path)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, u := range creds.URLs {
		if strings.Contains(u, "//"+addr+":") {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		t.Fatalf("%s's credentials name no server on %s: %v", node, addr, creds.URLs)
	}
	creds.URLs = urls
	if err := bus.WriteCreds(path, creds); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"agent", "--data", a.data, "--runtime", "sim", "--interval", "10m"}, args...)
	a.proc = h.Start(t, append([]string{"MESH_SERVER=", "MESH_TOKEN=", "MESH_DATA="}, env...), meshtest.Binary(t), args...)
	return a
}

// busLine is an agent's log line of a bus connection made (bus:
// connected, bus: reconnected), with the server's URL.
var busLine = regexp.MustCompile(`msg="bus: (?:re)?connected".* url=(\S+)`)

// lastBusURL is the URL of the last bus connection an agent's log says
// it made ("" when none).
func lastBusURL(log string) string {
	m := busLine.FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}
