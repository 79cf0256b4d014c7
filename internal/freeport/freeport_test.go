package freeport_test

import (
	"net"
	"strconv"
	"testing"

	"meshplane/internal/freeport"
)

// TestPortsAreFreeAndDistinct: each port given binds, none is given
// twice, and none is among the well-known and registered ports below 20000.
func TestPortsAreFreeAndDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p := freeport.Port(t)
		if seen[p] || p < 20000 {
			t.Fatalf("port %d: given before %v, or below 20000", p, seen[p])
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d does not bind: %v", p, err)
		}
		l.Close()
	}
}
