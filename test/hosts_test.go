package test

// A fleet across hosts (issue 19, §4): the controller on one host of a
// private link, agents on three others (package hosttest: Linux network
// namespaces, root), nothing between them on loopback. The mesh binary is
// the one the process tests build (binary), run with `ip netns exec`.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/events"
	"meshplane/internal/hosttest"
	"meshplane/internal/meshtest"
	"meshplane/internal/testtls"
	"meshplane/internal/testwait"
)

// The controller's ports on its host: the defaults, free on a host of its
// own.
const (
	hostsAPIPort = 7480
	hostsBusPort = 4222
)

// hostsMesh is a controller (mesh up) on host 0 of a private link, serving
// the API and the bus on that host's address with TLS from a private CA.
type hostsMesh struct {
	net    *hosttest.Net
	ctl    *hosttest.Host
	proc   *hosttest.Proc
	data   string // the controller's data directory
	caFile string // the CA's PEM, for --tls-ca
	url    string // the API's URL, https://ADDR:7480
	token  string
}

// startHostsMesh makes a private link of 1+hosts hosts and starts the
// controller on host 0.
func startHostsMesh(t testing.TB, hosts int) *hostsMesh {
	t.Helper()
	nt := hosttest.New(t, 1+hosts) // first: it skips where it cannot run
	bin := meshtest.Binary(t)
	m := &hostsMesh{net: nt, ctl: nt.Host(0), data: t.TempDir()}
	pki := testtls.New(t, m.ctl.Addr().String())
	m.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(m.caFile, pki.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	m.proc = m.ctl.Start(t, []string{"MESH_SERVER=", "MESH_TOKEN="}, bin, "up", "--data", m.data,
		"--listen", m.ctl.AddrPort(hostsAPIPort), "--bus-listen", m.ctl.AddrPort(hostsBusPort),
		"--tls-cert", pki.CertFile, "--tls-key", pki.KeyFile, "--tls-ca", m.caFile)
	// up says where it serves once it wrote DATA/bus-urls (which node
	// register --creds reads).
	testwait.Eventually(t, 30*time.Second, func() error {
		if exited, err := m.proc.Exited(); exited {
			t.Fatalf("the controller exited: %v\n%s", err, m.proc.Output())
		}
		if !strings.Contains(m.proc.Output(), "controller: API ") {
			return errors.New("the controller does not serve yet")
		}
		return nil
	})
	m.url = "https://" + m.ctl.AddrPort(hostsAPIPort)
	tok, err := httpapi.ReadToken(filepath.Join(m.data, httpapi.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	m.token = tok
	return m
}

// cli runs the mesh CLI on host h against the controller's API (with the
// CA), and MESH_DATA its data directory (the files are shared: what only
// the controller's host has).
func (m *hostsMesh) cli(t testing.TB, h *hosttest.Host, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := h.Command(ctx, meshtest.Binary(t), append(args, "--tls-ca", m.caFile)...)
	cmd.Env = append(os.Environ(), "MESH_SERVER="+m.url, "MESH_TOKEN="+m.token, "MESH_DATA="+m.data)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		code = xe.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, o.String(), e.String()
}

// mustCLI is cli, failing the test unless it exits 0.
func (m *hostsMesh) mustCLI(t testing.TB, h *hosttest.Host, args ...string) string {
	t.Helper()
	code, out, errOut := m.cli(t, h, args...)
	if code != meshtest.ExitOK {
		t.Fatalf("on %s: mesh %s: exit %d\n%s%s", h, strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// status is `mesh status -o json NODE` on host h.
func (m *hostsMesh) status(t testing.TB, h *hosttest.Host, node string) api.NodeStatus {
	t.Helper()
	var st []api.NodeStatus
	if err := json.Unmarshal([]byte(m.mustCLI(t, h, "status", "-o", "json", node)), &st); err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Node != node {
		t.Fatalf("status -o json %s: %+v", node, st)
	}
	return st[0]
}

// joinHost makes host h node's host, its agent's data in data, as the
// README's "Add a host" says: `mesh node join-token NODE` against the
// controller's API (from the controller's host here), then `mesh agent join
// URL --token T --data DIR --no-start` on h: the host checks the
// controller's CA against the token's fingerprint, makes its key and
// writes DIR/node.creds, which `mesh agent --data DIR` then uses. It
// returns what `mesh agent` on h needs besides --data and --runtime.
func (m *hostsMesh) joinHost(t testing.TB, h *hosttest.Host, node, data string) (args, env []string) {
	t.Helper()
	token := strings.TrimSpace(m.mustCLI(t, m.ctl, "node", "join-token", node))
	if !strings.HasPrefix(token, "MJ1.") {
		t.Fatalf("node join-token %s printed %q", node, token)
	}
	m.mustCLI(t, h, "agent", "join", m.url, "--token", token, "--data", data, "--no-start")
	return nil, nil
}

// hostAgent is `mesh agent --runtime sim` running on a host.
type hostAgent struct {
	host *hosttest.Host
	node string
	data string // its --data
	proc *hosttest.Proc
}

// startAgent joins h as node and starts its agent there, with extra flags.
func (m *hostsMesh) startAgent(t testing.TB, h *hosttest.Host, node string, extra ...string) *hostAgent {
	t.Helper()
	return m.startAgentWith(t, h, node, nil, extra...)
}

// startAgentWith is startAgent with more of the agent's environment.
func (m *hostsMesh) startAgentWith(t testing.TB, h *hosttest.Host, node string, more []string, extra ...string) *hostAgent {
	t.Helper()
	a := &hostAgent{host: h, node: node, data: t.TempDir()}
	args, env := m.joinHost(t, h, node, a.data)
	env = append(env, more...)
	args = append(append([]string{"agent", "--data", a.data, "--runtime", "sim"}, args...), extra...)
	a.proc = h.Start(t, append([]string{"MESH_SERVER=", "MESH_TOKEN=", "MESH_DATA="}, env...), meshtest.Binary(t), args...)
	return a
}

// queued are the apply ids of the reports waiting in the agent's outbox.
func (a *hostAgent) queued(t testing.TB) []string {
	t.Helper()
	// Read as mesh store verify --agent-data does, while the agent may be
	// appending (a line it is writing reads as cut short: not counted).
	c, err := agent.CheckOutbox(filepath.Join(a.data, agentd.OutboxDir))
	if err != nil {
		t.Fatal(err)
	}
	ids := c.Pending
	return ids
}

// hostsModule writes a module of one file and returns its path.
func hostsModule(t *testing.T, name string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name+".yaml")
	body := fmt.Sprintf("module: %[1]s\nfiles:\n  - path: /etc/%[1]s.conf\n    mode: \"0644\"\n    content: \"%[1]s\\n\"\n", name)
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestHostsOnAPrivateLink: the controller on one host of a private link
// (API and bus on its address, TLS from a private CA), three agents on
// hosts of their own: a declaration pushed to each is applied and its
// report recorded, the bus's connections come from the hosts' addresses,
// and nothing listens on loopback. Then a host's link goes down in the
// middle of a push: the pushes go on, its reports wait in its outbox, and
// when the link returns each is recorded exactly once and the host applies
// what was pushed meanwhile.
func TestHostsOnAPrivateLink(t *testing.T) {
	began := time.Now()
	m := startHostsMesh(t, 4)
	nodes := []string{"h1", "h2", "h3"}
	agents := map[string]*hostAgent{}
	for i, n := range nodes {
		interval := "10m"
		if n == "h1" {
			interval = "500ms" // drift applies, reported while its link is down
		}
		agents[n] = m.startAgent(t, m.net.Host(i+1), n, "--interval", interval)
	}
	for _, mod := range []string{"motd", "extra1", "extra2"} {
		m.mustCLI(t, m.ctl, "module", "define", hostsModule(t, mod))
	}
	for _, n := range nodes {
		m.mustCLI(t, m.ctl, "assign", "motd", n)
		m.mustCLI(t, m.ctl, "push", n)
	}
	// Asked from a host, not the controller's: the API across the link.
	asker := m.net.Host(3)
	for _, n := range nodes {
		testwait.Eventually(t, 30*time.Second, func() error {
			st := m.status(t, asker, n)
			if st.Pushed == nil || st.Applied == nil || st.Applied.Declaration != st.Pushed.Declaration {
				return fmt.Errorf("%s: pushed %+v, applied %+v", n, st.Pushed, st.Applied)
			}
			return nil
		})
	}
	t.Logf("three hosts in sync %.1f s after the start", time.Since(began).Seconds())

	t.Run("a host whose clock is 10 minutes ahead is refused, saying so", func(t *testing.T) {
		// h4's clock runs 10 minutes ahead: over events.MaxReportSkew, so
		// the controller records no apply of it, but report.refused
		// (bad-time) naming both clocks, and status says the node fails.
		m.startAgentWith(t, m.net.Host(4), "h4", []string{"MESH_AGENT_CLOCK_OFFSET=10m"}, "--interval", "10m")
		m.mustCLI(t, m.ctl, "assign", "motd", "h4")
		m.mustCLI(t, m.ctl, "push", "h4")
		var st api.NodeStatus
		testwait.Eventually(t, 30*time.Second, func() error {
			st = m.status(t, asker, "h4")
			if st.ReportRefused == nil {
				return fmt.Errorf("h4: no refused report yet: %+v", st)
			}
			return nil
		})
		if rr := st.ReportRefused; rr.Reason != events.RefusedTime || !strings.Contains(rr.Detail, "later than the controller's clock") || st.Health != "failing" || st.Applied != nil {
			t.Errorf("h4, 10 minutes ahead: health %s, applied %+v, refused %+v; want failing, none applied, bad-time naming the clocks", st.Health, st.Applied, rr)
		}
	})

	t.Run("the bus sees each host from its address", func(t *testing.T) {
		socks, err := m.ctl.Sockets()
		if err != nil {
			t.Fatal(err)
		}
		peers := map[netip.Addr]bool{}
		for _, s := range socks {
			switch {
			case s.State == "LISTEN" && s.Local.Addr() != m.ctl.Addr():
				t.Errorf("the controller's host listens on %s, not on its address %s", s.Local, m.ctl.Addr())
			case s.State == "ESTABLISHED" && s.Local.Addr().IsLoopback():
				t.Errorf("a connection on loopback on the controller's host: %s to %s", s.Local, s.Remote)
			case s.State == "ESTABLISHED" && s.Local.Port() == hostsBusPort:
				peers[s.Remote.Addr()] = true
			}
		}
		for i, n := range nodes {
			if h := m.net.Host(i + 1); !peers[h.Addr()] {
				t.Errorf("no bus connection from %s's host %s; the bus's peers: %v", n, h.Addr(), peers)
			}
		}
	})

	// The fault: h1's link goes down as its next declaration is pushed (it
	// may reach h1 just before the cut, or after it comes back); another is
	// pushed while it is down. h1's drift applies (every 500 ms, each
	// waiting out its delivery's timeout) keep their reports in its outbox
	// meanwhile.
	h1 := agents["h1"]
	m.mustCLI(t, m.ctl, "assign", "extra1", "h1")
	push := m.ctl.Start(t, nil, meshtest.Binary(t), "push", "h1", "--tls-ca", m.caFile,
		"--server", m.url, "--token-file", filepath.Join(m.data, httpapi.TokenFile))
	h1.host.LinkDown()
	select {
	case <-push.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("mesh push h1 did not return in 30 s\n%s", push.Output())
	}
	if _, err := push.Exited(); err != nil {
		t.Fatalf("mesh push h1 while its link goes down: %v\n%s", err, push.Output())
	}
	m.mustCLI(t, m.ctl, "assign", "extra2", "h1")
	m.mustCLI(t, m.ctl, "push", "h1")
	var queued []string
	testwait.Eventually(t, 30*time.Second, func() error {
		if queued = h1.queued(t); len(queued) < 2 {
			return fmt.Errorf("%d report(s) kept in h1's outbox, want at least 2", len(queued))
		}
		return nil
	})
	pushed := m.status(t, asker, "h1").Pushed
	if st := m.status(t, asker, "h1"); st.Applied != nil && st.Applied.Declaration == pushed.Declaration {
		t.Fatalf("h1's link is down, yet its apply of %s, pushed meanwhile, is recorded", pushed.Declaration)
	}
	h1.host.LinkUp()

	testwait.Eventually(t, 45*time.Second, func() error {
		st := m.status(t, asker, "h1")
		if st.Applied == nil || st.Applied.Declaration != pushed.Declaration {
			return fmt.Errorf("h1 applied %+v, want %s, pushed while its link was down", st.Applied, pushed.Declaration)
		}
		if left := h1.queued(t); len(left) > 0 {
			return fmt.Errorf("%d report(s) still kept in h1's outbox", len(left))
		}
		return nil
	})
	// What the API says of h1's applies, to hold against the store below.
	var timeline []api.Entry
	if err := json.Unmarshal([]byte(m.mustCLI(t, asker, "timeline", "-o", "json", "--node", "h1", "--type", events.TypeApplyReported)), &timeline); err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, e := range timeline {
		listed++
		if e.Run != nil {
			listed += e.Run.Count - 1
		}
	}
	for _, n := range nodes {
		if err := agents[n].proc.Stop(30 * time.Second); err != nil {
			t.Errorf("agent %s: %v", n, err)
		}
	}
	if err := m.proc.Stop(30 * time.Second); err != nil {
		t.Fatalf("the controller: %v\n%s", err, m.proc.Output())
	}

	// What the store holds: each of h1's applies recorded once, each kept
	// report too. A kept report is noted late at most once, and may not be:
	// the first send of a report, held up in TCP while the link was down,
	// reaches the controller as an on-time one (attempts 0) once the link
	// is back, and the agent's later send of it (attempts 1 and more) is
	// answered "delivered before" and appends nothing.
	applies, lates := map[string]int{}, map[string]int{}
	for _, ev := range meshtest.StoreEvents(t, m.data) {
		if ev.Stream != "node-h1" {
			continue
		}
		switch ev.Type {
		case events.TypeApplyReported:
			applies[ev.ID.String()]++
		case events.TypeReportDeliveredLate:
			lates[ev.Causation]++
		}
	}
	for _, id := range queued {
		if applies[id] != 1 || lates[id] > 1 {
			t.Errorf("apply %s, kept while h1's link was down: recorded %d time(s), noted late %d time(s); want once, and late at most once", id, applies[id], lates[id])
		}
	}
	for id, n := range applies {
		if n != 1 {
			t.Errorf("h1's apply %s recorded %d times", id, n)
		}
	}
	if recorded := len(applies); listed > recorded {
		t.Errorf("mesh timeline lists %d apply.reported of h1 before the stop, the store holds %d", listed, recorded)
	}
	noted := 0
	for _, id := range queued {
		noted += lates[id]
	}
	t.Logf("%d report(s) kept in h1's outbox while its link was down, %d of them noted late", len(queued), noted)
	t.Logf("the whole test: %.1f s", time.Since(began).Seconds())
}
