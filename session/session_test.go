package session

import (
	"context"
	"errors"
	"os"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/events/storeurl"
)

func TestReadOfAnEmptyDirectoryIsNoStore(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(context.Background(), Target{Data: dir}, Options{})
	if !errors.Is(err, ErrNoStore) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want ErrNoStore", err)
	}
	if _, err := os.Stat(storeurl.Path(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read made a store: %v", err)
	}
}

func TestRefusedFreshCommandsLeaveNoStore(t *testing.T) {
	dir := t.TempDir()
	fresh := []commands.Command{commands.RegisterNode{Node: "a"}, commands.AdoptNode{Node: "nosuch"}}
	_, err := Open(context.Background(), Target{Data: dir}, Options{Write: true, Fresh: fresh})
	var rej *commands.Rejection
	if !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
		t.Fatalf("got %v, want a node-unknown refusal", err)
	}
	if _, err := os.Stat(storeurl.Path(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused write made a store: %v", err)
	}
}

func TestLocalWriteThenRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, Target{Data: dir}, Options{Write: true, Fresh: []commands.Command{commands.RegisterNode{Node: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Remote() || w.Local == nil || w.Store == nil {
		t.Fatalf("a local session is remote: %+v", w)
	}
	if _, err := w.Service.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "test", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, resume := range []bool{false, true} {
		r, err := Open(ctx, Target{Data: dir}, Options{Resume: resume})
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Local.NodeShow(ctx, "a")
		r.Close()
		if err != nil || st.Status.Node != "a" {
			t.Fatalf("resume=%v: node show a: %+v, %v", resume, st, err)
		}
	}
}

func TestClientWithoutATokenIsRefused(t *testing.T) {
	_, err := Open(context.Background(), Target{Server: "https://127.0.0.1:1"}, Options{})
	if !errors.Is(err, ErrNoToken) {
		t.Fatalf("got %v, want ErrNoToken", err)
	}
	s, err := Open(context.Background(), Target{Server: "https://127.0.0.1:1", Token: "t"}, Options{})
	if err != nil || !s.Remote() {
		t.Fatalf("a client with a token: %v", err)
	}
	s.Close()
}
