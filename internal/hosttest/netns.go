package hosttest

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"meshplane/internal/safego"
)

// Do runs fn on an OS thread moved into the host's network namespace
// (setns), and returns what fn returns (or its panic, as an error). A
// socket fn makes belongs to the host for good, on whatever thread it is
// used later: that is how Dial and Listen work. fn must make its sockets
// on its own goroutine (no address to resolve, no goroutine of its own).
// The thread goes back to the test's namespace afterwards, or, if it
// cannot, ends with fn's goroutine.
func (h *Host) Do(fn func() error) error {
	errc := make(chan error, 1)
	safego.Go("hosttest.setns", nil, func() error {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("hosttest: %s: the thread's own namespace: %w", h, err)
			return nil // the thread ends locked: it is thrown away
		}
		defer unix.Close(orig)
		if err := enter(h.ns); err != nil {
			errc <- fmt.Errorf("hosttest: %s: %w", h, err)
			return nil
		}
		err = safego.Do("hosttest.setns", fn)
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread() // back where it was: the scheduler may reuse it
		}
		errc <- err
		return nil
	})
	return <-errc
}

// enter moves the calling thread into the named network namespace.
func enter(ns string) error {
	fd, err := unix.Open(filepath.Join(netnsDir, ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", ns, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	return nil
}

// Dial connects from the host to address (an IP address and port, no name
// to resolve), as net.Dialer.DialContext does.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := h.Do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// Listen listens on the host at address (an IP address and port: the
// host's Addr, or 127.0.0.1 for the host's own loopback), as net.Listen
// does.
func (h *Host) Listen(network, address string) (net.Listener, error) {
	var ln net.Listener
	err := h.Do(func() error {
		var err error
		ln, err = net.Listen(network, address)
		return err
	})
	return ln, err
}

// Socket is one TCP socket of a host's namespace, as the kernel lists it
// (/proc/net/tcp and tcp6).
type Socket struct {
	Local, Remote netip.AddrPort // IPv4-mapped IPv6 addresses unmapped
	State         string         // "LISTEN", "ESTABLISHED", "TIME_WAIT", ...
}

// tcpStates are the kernel's TCP states by their number in /proc/net/tcp.
var tcpStates = map[uint64]string{
	1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2",
	6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN", 11: "CLOSING",
}

// Sockets lists the TCP sockets of the host's namespace, of every process
// in it: the listeners and connections a server on the host has, and the
// addresses of its peers.
func (h *Host) Sockets() ([]Socket, error) {
	var socks []Socket
	err := h.Do(func() error {
		for _, f := range []string{"tcp", "tcp6"} {
			// thread-self: this thread's namespace, not the process's.
			s, err := readSockets(filepath.Join("/proc/thread-self/net", f))
			if err != nil {
				return err
			}
			socks = append(socks, s...)
		}
		return nil
	})
	return socks, err
}

// readSockets parses a /proc/net/tcp or tcp6 file.
func readSockets(path string) ([]Socket, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var socks []Socket
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		local, err := parseProcAddr(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		remote, err := parseProcAddr(fields[2])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		st, err := strconv.ParseUint(fields[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("%s: state %q: %w", path, fields[3], err)
		}
		name, ok := tcpStates[st]
		if !ok {
			name = fmt.Sprintf("state %d", st)
		}
		socks = append(socks, Socket{Local: local, Remote: remote, State: name})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return socks, nil
}

// parseProcAddr parses an address of /proc/net/tcp: the address's 32-bit
// words in hex, each in the machine's byte order, a colon, the port in
// hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q: no port", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: port: %w", s, err)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q: not 4 or 16 bytes of hex", s)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
