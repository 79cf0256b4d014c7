package meshup

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/controllerd"
	"meshplane/events/storeurl"
	"meshplane/internal/freeport"
)

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
	if free := freeport.Addr(t); StoreFree(free) != nil {
		t.Errorf("StoreFree(%s), free: %v", free, StoreFree(free))
	}
}

// TestUpSetUpRefused: a set-up Check refuses stops Up before the store or
// the controller: Refused's error, and no store left behind.
func TestUpSetUpRefused(t *testing.T) {
	mf, defs := exampleSetUp(t)
	data := filepath.Join(t.TempDir(), "data")
	_, err := Up(context.Background(), UpConfig{
		Controller: controllerd.Config{Data: data}, SetUp: true, File: mf, Modules: defs,
		Check: func(context.Context, []commands.Command) error {
			return &commands.Rejection{Code: "invalid", Msg: "no"}
		},
		Out: io.Discard, Log: io.Discard,
	})
	var rej *commands.Rejection
	if !errors.As(err, &rej) || !strings.Contains(rej.Msg, "nothing was written") {
		t.Fatalf("%v, want the refusal saying nothing was written", err)
	}
	if _, err := os.Stat(storeurl.Path(data)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused set-up left a store (%v)", err)
	}
}

// TestUpStoreHeld: a set-up on a bolt store another process holds fails
// with controllerd.ErrStoreHeld, before any controller starts.
func TestUpStoreHeld(t *testing.T) {
	mf, defs := exampleSetUp(t)
	data := t.TempDir()
	held, err := storeurl.Open(context.Background(), "", storeurl.Options{Data: data, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = Up(context.Background(), UpConfig{
		Controller: controllerd.Config{Data: data}, SetUp: true, File: mf, Modules: defs,
		Clock: func() time.Time { return time.Now().UTC() }, Actor: "alice", Out: io.Discard, Log: io.Discard,
	})
	if !errors.Is(err, controllerd.ErrStoreHeld) {
		t.Fatalf("%v, want controllerd.ErrStoreHeld", err)
	}
}
