package hosttest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/internal/hosttest"
)

// TestNew: three hosts, each with its own address on the link's subnet
// and nothing else but its loopback; every host reaches every other over
// the link, the connection seen from the address it came from; a host's
// loopback is its own.
func TestNew(t *testing.T) {
	nt := hosttest.New(t, 3)
	hosts := nt.Hosts()
	if len(hosts) != 3 {
		t.Fatalf("%d hosts, want 3", len(hosts))
	}
	for i, h := range hosts {
		want := netip.MustParseAddr(fmt.Sprintf("10.213.0.%d", i+1))
		if h.Addr() != want || !nt.Subnet().Contains(h.Addr()) {
			t.Errorf("host %d at %s, want %s in %s", i, h.Addr(), want, nt.Subnet())
		}
		out, err := h.Command(context.Background(), "ip", "-4", "-o", "addr", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: ip addr: %v\n%s", h, err, out)
		}
		var addrs []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			addrs = append(addrs, f[1]+" "+f[3])
		}
		if wantAddrs := []string{"lo 127.0.0.1/8", "eth0 " + want.String() + "/24"}; !slices.Equal(addrs, wantAddrs) {
			t.Errorf("%s has addresses %q, want %q", h, addrs, wantAddrs)
		}
		out, err = h.Command(context.Background(), "ip", "netns", "identify").CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != h.Name() {
			t.Errorf("a command on %s runs in namespace %q (%v), want %q", h, got, err, h.Name())
		}
	}
	for _, from := range hosts {
		for _, to := range hosts {
			if from == to {
				continue
			}
			t.Run(fmt.Sprintf("h%d to h%d", from.Index(), to.Index()), func(t *testing.T) {
				ln := listen(t, to, to.AddrPort(0))
				c, err := from.Dial(context.Background(), "tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				peer := accept(t, ln)
				defer peer.Close()
				if got := peer.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got != from.Addr() {
					t.Errorf("the connection comes from %s, want %s", got, from.Addr())
				}
				echo(t, c, peer)
			})
		}
	}
	t.Run("loopback is each host's own", func(t *testing.T) {
		ln := listen(t, hosts[0], "127.0.0.1:0")
		c, err := hosts[0].Dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("h0 to its own loopback: %v", err)
		}
		c.Close()
		if c, err := hosts[1].Dial(context.Background(), "tcp", ln.Addr().String()); err == nil {
			c.Close()
			t.Fatalf("h1 reached h0's loopback listener at %s", ln.Addr())
		}
	})
}

// TestSockets: a host lists its listener and the connection to it, with
// the peer's address; another host lists neither.
func TestSockets(t *testing.T) {
	nt := hosttest.New(t, 2)
	srv, cli := nt.Host(0), nt.Host(1)
	ln := listen(t, srv, srv.AddrPort(0))
	at := ln.Addr().(*net.TCPAddr).AddrPort()
	c, err := cli.Dial(context.Background(), "tcp", at.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := accept(t, ln)
	defer peer.Close()
	from := c.LocalAddr().(*net.TCPAddr).AddrPort()

	for _, tc := range []struct {
		name string
		h    *hosttest.Host
		want hosttest.Socket
		has  bool
	}{
		{"the server's listener", srv, hosttest.Socket{Local: at, Remote: netip.AddrPortFrom(netip.IPv4Unspecified(), 0), State: "LISTEN"}, true},
		{"the server's connection", srv, hosttest.Socket{Local: at, Remote: from, State: "ESTABLISHED"}, true},
		{"the client's connection", cli, hosttest.Socket{Local: from, Remote: at, State: "ESTABLISHED"}, true},
		{"no listener on the client", cli, hosttest.Socket{Local: at, Remote: netip.AddrPortFrom(netip.IPv4Unspecified(), 0), State: "LISTEN"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socks, err := tc.h.Sockets()
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(socks, tc.want); got != tc.has {
				t.Errorf("%s lists %+v: %v, want %v; it lists %+v", tc.h, tc.want, got, tc.has, socks)
			}
		})
	}
}

// TestLinkDown: with a host's link down, nothing gets to or from it (a
// new connection fails, bytes on an open one do not arrive) and the other
// hosts still reach each other; with the link back, the open connection
// delivers what was sent meanwhile and new connections work.
func TestLinkDown(t *testing.T) {
	nt := hosttest.New(t, 3)
	srv, cut, other := nt.Host(0), nt.Host(1), nt.Host(2)
	ln := listen(t, srv, srv.AddrPort(0))
	c, err := cut.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := accept(t, ln)
	defer peer.Close()
	echo(t, c, peer)

	cut.LinkDown()
	dialFails := func(h *hosttest.Host) error {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		c, err := h.Dial(ctx, "tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dialFails(cut); err == nil {
		t.Fatal("with its link down, the host still connects")
	}
	if err := dialFails(other); err != nil {
		t.Fatalf("another host, its link up: %v", err)
	}
	accept(t, ln).Close() // other's
	if _, err := c.Write([]byte("sent while down\n")); err != nil {
		t.Fatalf("write on the open connection (queued by the kernel): %v", err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := peer.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d byte(s) (%v) across a link that is down", n, err)
	}

	cut.LinkUp()
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(peer).ReadString('\n')
	if err != nil || line != "sent while down\n" {
		t.Fatalf("after LinkUp the open connection delivers %q, %v; want what was sent while down", line, err)
	}
	if err := dialFails(cut); err != nil {
		t.Fatalf("after LinkUp a new connection: %v", err)
	}
	accept(t, ln).Close()
}

// TestStart: a process started on a host runs in its namespace with the
// environment given, its stdout and stderr in its log file; Kill ends it
// (SIGKILL) and Stop (SIGTERM) another; one that exits on its own is seen
// exited.
func TestStart(t *testing.T) {
	h := hosttest.New(t, 1).Host(0)
	p := h.Start(t, []string{"HOSTTEST_X=off by 10m"}, "sh", "-c", `echo out; echo err >&2; echo "x=$HOSTTEST_X"; ip netns identify; exec sleep 60`)
	want := "out\nerr\nx=off by 10m\n" + h.Name() + "\n"
	deadline := time.Now().Add(10 * time.Second)
	for p.Output() != want {
		if time.Now().After(deadline) || len(p.Output()) > len(want) {
			t.Fatalf("output %q (log %s), want %q", p.Output(), p.LogFile(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Threads of the test's process end (a goroutine that ends locked to
	// its thread ends it): the process, killed when the test's process
	// dies, lives on.
	for range 20 {
		done := make(chan struct{})
		go func() { runtime.LockOSThread(); close(done) }()
		<-done
		if err := h.Do(func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if exited, err := p.Exited(); exited {
		t.Fatalf("the process exited before Kill: %v", err)
	}
	p.Kill()
	exited, err := p.Exited()
	var xe *exec.ExitError
	if !exited || !errors.As(err, &xe) || xe.String() != "signal: killed" {
		t.Fatalf("after Kill: exited %v, %v; want killed", exited, err)
	}
	p.Kill() // again: nothing

	q := h.Start(t, nil, "sleep", "60")
	if err := q.Stop(10 * time.Second); !errors.As(err, &xe) || xe.String() != "signal: terminated" {
		t.Fatalf("Stop: %v, want terminated", err)
	}

	r := h.Start(t, nil, "true")
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("true did not exit in 10 s")
	}
	if exited, err := r.Exited(); !exited || err != nil {
		t.Fatalf("true: exited %v, %v; want exit 0", exited, err)
	}
}

// TestCleanup: when the test that made a link ends, its namespaces are
// gone, and nothing was added to the machine's own interfaces.
func TestCleanup(t *testing.T) {
	links := func() string {
		out, err := exec.Command("ip", "-o", "link", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("ip link: %v\n%s", err, out)
		}
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			names = append(names, strings.Fields(l)[1])
		}
		return strings.Join(names, " ")
	}
	before := links()
	var names []string
	t.Run("a link", func(t *testing.T) {
		nt := hosttest.New(t, 2)
		names = nt.Namespaces()
		if len(names) != 3 {
			t.Fatalf("namespaces %q, want the lan's and two hosts'", names)
		}
		if during := links(); during != before {
			t.Errorf("the machine's interfaces changed while the link is up: %s, before %s", during, before)
		}
		h := nt.Host(0)
		h.Start(t, nil, "sleep", "60") // killed by the cleanup
	})
	if t.Failed() || len(names) == 0 {
		return
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v\n%s", err, out)
	}
	for _, n := range names {
		if strings.Contains(string(out), n) {
			t.Errorf("namespace %s is left after its test:\n%s", n, out)
		}
	}
	if after := links(); after != before {
		t.Errorf("the machine's interfaces after: %s, before %s", after, before)
	}
}

// TestSweep: Sweep deletes this package's namespaces made longer ago than
// it is told, by the time in their names, and leaves newer ones and other
// names alone.
func TestSweep(t *testing.T) {
	hosttest.New(t, 0) // skips (or fails in CI) where namespaces cannot be made
	now := time.Now()
	mk := func(name string) string {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v\n%s", name, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
		return name
	}
	suffix := fmt.Sprintf("sweeptest%d", os.Getpid())
	old := mk(fmt.Sprintf("%s%x-%s-h0", hosttest.Prefix, now.Add(-2*time.Hour).Unix(), suffix))
	fresh := mk(fmt.Sprintf("%s%x-%s-h0", hosttest.Prefix, now.Unix(), suffix))
	odd := mk(hosttest.Prefix + "nothex-" + suffix)
	swept, err := hosttest.Sweep(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(swept, old) || slices.Contains(swept, fresh) || slices.Contains(swept, odd) {
		t.Errorf("swept %q; want %s among them, not %s nor %s", swept, old, fresh, odd)
	}
	out, _ := exec.Command("ip", "netns", "list").CombinedOutput()
	for _, tc := range []struct {
		name string
		left bool
	}{{old, false}, {fresh, true}, {odd, true}} {
		if got := strings.Contains(string(out), tc.name); got != tc.left {
			t.Errorf("after the sweep, %s left: %v, want %v", tc.name, got, tc.left)
		}
	}
}

// listen listens on h at addr until the test ends.
func listen(t *testing.T, h *hosttest.Host, addr string) net.Listener {
	t.Helper()
	ln, err := h.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// accept takes one connection from ln within 10 s.
func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// echo sends a line from a to b and back.
func echo(t *testing.T, a, b net.Conn) {
	t.Helper()
	for _, d := range []struct{ from, to net.Conn }{{a, b}, {b, a}} {
		if _, err := d.from.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		_ = d.to.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(d.to).ReadString('\n')
		if err != nil || line != "ping\n" {
			t.Fatalf("read %q, %v; want ping", line, err)
		}
		_ = d.to.SetReadDeadline(time.Time{})
	}
}
