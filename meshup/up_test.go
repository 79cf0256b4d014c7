package meshup

import (
	"net"
	"strings"
	"testing"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestStoreServed: the artifact store is served on this machine only by a
// node that runs on its engine, at its private address or loopback.
func TestStoreServed(t *testing.T) {
	mf, err := ParseFile("m.yaml", []byte("nodes:\n  - {name: a, artifact-store: 5000, private-address: 10.1.0.3}\n  - {name: b, runtime: docker, artifact-store: 7481}\n  - {name: c, runtime: docker, artifact-store: 7482, private-address: 127.0.0.2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		rts        map[string]string
		node, addr string
	}{
		{"all simulated", map[string]string{"a": RuntimeSim, "b": RuntimeSim, "c": RuntimeSim}, "", ""},
		{"b on the engine, loopback", map[string]string{"a": RuntimeSim, "b": RuntimeDocker, "c": RuntimeSim}, "b", "127.0.0.1:7481"},
		{"c on the engine, its address", map[string]string{"a": RuntimeSim, "b": RuntimeSim, "c": RuntimeDocker}, "c", "127.0.0.2:7482"},
		{"a on the engine, at its private address", map[string]string{"a": RuntimeDocker}, "a", "10.1.0.3:5000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, addr, err := StoreServed(mf, tt.rts)
			if err != nil || node != tt.node || addr != tt.addr {
				t.Errorf("StoreServed = %q, %q, %v; want %q, %q", node, addr, err, tt.node, tt.addr)
			}
		})
	}
}

// TestStoreFree: an artifact store address something listens on already
// fails up before it starts anything, naming the address.
func TestStoreFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	if err := StoreFree(taken); err == nil || !strings.Contains(err.Error(), taken) {
		t.Errorf("StoreFree(%s), taken: %v, want an error naming it", taken, err)
	}
	if free := freeAddr(t); StoreFree(free) != nil {
		t.Errorf("StoreFree(%s), free: %v", free, StoreFree(free))
	}
}
