// Package freeport gives tests a loopback TCP port that is free now and
// that nothing else on the machine is likely to take before the process
// the test starts binds it.
//
// A port the kernel picks (":0") comes from the ephemeral range, which is
// also where every outgoing connection's local port comes from: between
// the test closing its probe and a child process binding the port, any of
// the suite's thousands of client connections may take it ("bind: address
// already in use", CI's TestClusterFailover). The ports given here are
// drawn at random below that range, where the kernel never assigns a
// client's port, each tried by binding it first and never given twice in
// one process.
package freeport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// low is the lowest port drawn: above the well-known and registered
// services a machine commonly runs.
const low = 20000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Port is a loopback TCP port free when it returns.
func Port(t testing.TB) int {
	t.Helper()
	high := ephemeralLow() - 1
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		p := low + rand.IntN(high-low+1)
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		given[p] = true
		return p
	}
	t.Fatalf("freeport: no free port in %d-%d after 200 tries", low, high)
	return 0
}

// Addr is 127.0.0.1:Port(t).
func Addr(t testing.TB) string { return "127.0.0.1:" + strconv.Itoa(Port(t)) }

// ephemeralLow is the lowest port of the kernel's ephemeral range (Linux's
// ip_local_port_range), or 32768 (its default) when it cannot be read or
// leaves too little room below it.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < low+1000 {
		return 32768
	}
	return n
}
