package hosttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Prefix begins the name of every namespace this package makes.
const Prefix = "mht-"

// StaleAfter is how old a namespace of Prefix must be for New's sweep to
// delete it: older than any test that could still be using it.
const StaleAfter = time.Hour

// DefaultSubnet is the link's subnet unless Options says otherwise.
var DefaultSubnet = netip.MustParsePrefix("10.213.0.0/24")

// ErrUnavailable means network namespaces cannot be made here: not root,
// no ip, or `ip netns add` refused.
var ErrUnavailable = errors.New("hosttest: network namespaces unavailable")

// netnsDir is where `ip netns` keeps its named namespaces.
const netnsDir = "/run/netns"

// Options are what a Net is made with.
type Options struct {
	// Subnet is the link's IPv4 subnet: host i gets its (i+1)th address.
	// Zero means DefaultSubnet.
	Subnet netip.Prefix
}

// Net is a private link (a bridge in a namespace of its own) and the hosts
// on it.
type Net struct {
	t      testing.TB
	id     string // Prefix + time + random: the names' common part
	lan    string // the namespace holding the bridge
	subnet netip.Prefix

	mu    sync.Mutex
	hosts []*Host
}

// Host is a network namespace on a Net: its loopback up, eth0 on the link
// with one address.
type Host struct {
	net   *Net
	index int
	ns    string // its namespace's name
	port  string // its bridge port, in the lan namespace
	addr  netip.Addr
}

// New makes a private link with n hosts on DefaultSubnet (NewWith).
func New(t testing.TB, n int) *Net {
	t.Helper()
	return NewWith(t, n, Options{})
}

// NewWith makes a private link on o.Subnet with n hosts; t.Cleanup deletes
// it all. Where namespaces cannot be made it skips t, loudly, or under
// CI=true fails it.
func NewWith(t testing.TB, n int, o Options) *Net {
	t.Helper()
	subnet := o.Subnet
	if !subnet.IsValid() {
		subnet = DefaultSubnet
	}
	if !subnet.Addr().Is4() {
		t.Fatalf("hosttest: subnet %s: want an IPv4 subnet", subnet)
	}
	subnet = subnet.Masked()
	if subnet.Bits() > 30 || hostsIn(subnet) < n {
		t.Fatalf("hosttest: subnet %s holds fewer than %d hosts", subnet, n)
	}
	if err := Available(); err != nil {
		unavailable(t, err)
	}
	sweepOnce.Do(func() {
		if _, err := Sweep(StaleAfter); err != nil {
			t.Logf("hosttest: sweeping stale namespaces: %v", err)
		}
	})
	nt := &Net{t: t, subnet: subnet}
	nt.id = fmt.Sprintf("%s%x-%s", Prefix, time.Now().Unix(), randomHex(3))
	nt.lan = nt.id + "-lan"
	if out, err := ip("netns", "add", nt.lan); err != nil {
		unavailable(t, fmt.Errorf("%w: ip netns add %s: %v: %s", ErrUnavailable, nt.lan, err, out))
	}
	t.Cleanup(nt.remove)
	for _, args := range [][]string{
		{"-n", nt.lan, "link", "set", "lo", "up"},
		{"-n", nt.lan, "link", "add", "br0", "type", "bridge"},
		{"-n", nt.lan, "link", "set", "br0", "up"},
	} {
		nt.must(args...)
	}
	for range n {
		nt.AddHost()
	}
	return nt
}

// sweepOnce makes New sweep once per test binary.
var sweepOnce sync.Once

// Available says whether network namespaces can be made here (root, and
// iproute2's ip on the PATH): nil, or an ErrUnavailable saying what is
// missing. New also tries to make one, which Available does not.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (uid %d): network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN", ErrUnavailable, os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no ip command (install iproute2): %v", ErrUnavailable, err)
	}
	return nil
}

// unavailable skips t for err, loudly, or fails it under CI=true.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if inCI() {
		t.Fatalf("%v (under CI=true the host harness is required)", err)
	}
	t.Skipf("SKIPPED: %v (run as root with iproute2; under CI=true this fails)", err)
}

// inCI says whether CI is set true.
func inCI() bool { v, _ := strconv.ParseBool(os.Getenv("CI")); return v }

// AddHost puts one more host on the link, with the next address.
func (nt *Net) AddHost() *Host {
	nt.t.Helper()
	nt.mu.Lock()
	defer nt.mu.Unlock()
	i := len(nt.hosts)
	a := nt.subnet.Addr()
	for range i + 1 {
		a = a.Next()
	}
	if !nt.subnet.Contains(a) || a == lastAddr(nt.subnet) {
		nt.t.Fatalf("hosttest: no address left in %s for host %d", nt.subnet, i)
	}
	h := &Host{net: nt, index: i, ns: fmt.Sprintf("%s-h%d", nt.id, i), port: fmt.Sprintf("p%d", i), addr: a}
	nt.must("netns", "add", h.ns)
	nt.hosts = append(nt.hosts, h) // from here on, remove deletes it
	for _, args := range [][]string{
		{"-n", h.ns, "link", "set", "lo", "up"},
		{"-n", nt.lan, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.ns},
		{"-n", nt.lan, "link", "set", h.port, "master", "br0"},
		{"-n", nt.lan, "link", "set", h.port, "up"},
		{"-n", h.ns, "addr", "add", netip.PrefixFrom(a, nt.subnet.Bits()).String(), "dev", "eth0"},
		{"-n", h.ns, "link", "set", "eth0", "up"},
	} {
		nt.must(args...)
	}
	return h
}

// Hosts are the link's hosts, in the order they were made.
func (nt *Net) Hosts() []*Host {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return append([]*Host(nil), nt.hosts...)
}

// Host is host i (from 0).
func (nt *Net) Host(i int) *Host {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if i < 0 || i >= len(nt.hosts) {
		nt.t.Fatalf("hosttest: no host %d (%d hosts)", i, len(nt.hosts))
	}
	return nt.hosts[i]
}

// Subnet is the link's subnet.
func (nt *Net) Subnet() netip.Prefix { return nt.subnet }

// LAN is the name of the namespace holding the link's bridge.
func (nt *Net) LAN() string { return nt.lan }

// Namespaces are the names of every namespace of the link: the lan's and
// each host's.
func (nt *Net) Namespaces() []string {
	names := []string{nt.lan}
	for _, h := range nt.Hosts() {
		names = append(names, h.ns)
	}
	return names
}

// must runs ip args and fails the test if it fails.
func (nt *Net) must(args ...string) {
	nt.t.Helper()
	if out, err := ip(args...); err != nil {
		nt.t.Fatalf("hosttest: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the hosts' namespaces, then the lan's (which takes the
// bridge and the veth pairs with it).
func (nt *Net) remove() {
	names := nt.Namespaces()
	for i := len(names) - 1; i >= 0; i-- {
		if out, err := ip("netns", "del", names[i]); err != nil {
			nt.t.Errorf("hosttest: ip netns del %s: %v: %s", names[i], err, out)
		}
	}
}

// Name is the host's namespace's name (for `ip netns exec`).
func (h *Host) Name() string { return h.ns }

// Index is the host's number on its link, from 0.
func (h *Host) Index() int { return h.index }

// Addr is the host's address on the link.
func (h *Host) Addr() netip.Addr { return h.addr }

// AddrPort is the host's address with port: what a server on the host
// listens on and its clients dial ("10.213.0.1:4222").
func (h *Host) AddrPort(port uint16) string { return netip.AddrPortFrom(h.addr, port).String() }

// String is the host's namespace and address, for messages.
func (h *Host) String() string { return h.ns + "(" + h.addr.String() + ")" }

// Command is name with args, to run in the host's namespace (`ip netns
// exec`, which execs it: the command's process is the program's). For a
// process that outlives a call, Start is better: it is killed with the
// test.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.ns, name}, args...)...)
}

// LinkDown takes the host's link down in the middle of whatever it does:
// its port on the bridge goes down, so the host's eth0 loses its carrier
// and every packet to or from it is lost (connections stay open, unaware,
// until their own timeouts). It fails the test if ip does.
func (h *Host) LinkDown() {
	h.net.t.Helper()
	h.net.must("-n", h.net.lan, "link", "set", h.port, "down")
}

// LinkUp brings the host's link back after LinkDown.
func (h *Host) LinkUp() {
	h.net.t.Helper()
	h.net.must("-n", h.net.lan, "link", "set", h.port, "up")
}

// Sweep deletes the namespaces of Prefix made more than older ago (by the
// time in their names), what a crashed run left, and returns their names.
// Processes still in them are left alone; the namespace ends with the last
// of them.
func Sweep(older time.Duration) ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("hosttest: sweep: %w", err)
	}
	cutoff := time.Now().Add(-older)
	var swept []string
	var errs []error
	for _, e := range ents {
		made, ok := madeAt(e.Name())
		if !ok || !made.Before(cutoff) {
			continue
		}
		if out, err := ip("netns", "del", e.Name()); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", e.Name(), err, out))
			continue
		}
		swept = append(swept, e.Name())
	}
	if err := errors.Join(errs...); err != nil {
		return swept, fmt.Errorf("hosttest: sweep: %w", err)
	}
	return swept, nil
}

// madeAt is the time in a namespace name of this package's
// (mht-<hex unix seconds>-...), and whether it is one.
func madeAt(name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return time.Time{}, false
	}
	hexTime, _, ok := strings.Cut(rest, "-")
	if !ok {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(hexTime, 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

// ip runs iproute2's ip with args and returns its combined output.
func ip(args ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return bytes.TrimSpace(out.Bytes()), err
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// hostsIn is how many host addresses an IPv4 subnet holds (network and
// broadcast addresses excluded).
func hostsIn(p netip.Prefix) int { return 1<<(32-p.Bits()) - 2 }

// lastAddr is the subnet's broadcast address.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= 1<<(32-p.Bits()) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
