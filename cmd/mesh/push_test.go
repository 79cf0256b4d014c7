package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"meshplane/declaration"
)

// fakeBus is a fake controller.Publisher: it keeps what was pushed, or fails
// for the nodes in fail.
type fakeBus struct {
	mu     sync.Mutex
	pushed []string // declaration ids
	fail   map[string]bool
}

func (b *fakeBus) PutDeclaration(_ context.Context, d declaration.Declaration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail[d.Node] {
		return errors.New("bus down")
	}
	b.pushed = append(b.pushed, d.ID)
	return nil
}

func (b *fakeBus) ids() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.pushed, " ")
}

// mesh push pushes now through a controller's bus: one node or every one;
// a failed send is printed and exits 1. On a local store there is no bus.
func TestPush(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	dir := upExample(t)
	if code, _, errOut := mesh(t, "push", "novox", "--data", dir); code != exitFailed || !strings.Contains(errOut, "no bus is attached") {
		t.Fatalf("push on a local store: exit %d, %q", code, errOut)
	}
	b := &fakeBus{fail: map[string]bool{}}
	s := startServerWith(t, dir, b)
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
		bus  string
	}{
		{"one node", []string{"push", "novox"}, exitOK, "novox: pushed novox/1 (sha256:", "novox/1"},
		{"every node", []string{"push"}, exitOK, "g14: pushed g14/1 (sha256:", "g14/1 novox/1"},
		{"an unknown node", []string{"push", "ghost"}, exitRejected, "", ""},
		{"two nodes", []string{"push", "g14", "novox"}, exitUsage, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.ids()
			code, out, errOut := mesh(t, append(tc.args, s.flags()...)...)
			if code != tc.code || !strings.Contains(out, tc.out) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.out, out, errOut)
			}
			// Nodes are pushed side by side: the bus sees them in any order.
			sent := strings.Fields(strings.TrimPrefix(b.ids(), before))
			slices.Sort(sent)
			if got := strings.Join(sent, " "); got != tc.bus {
				t.Errorf("pushed %q, want %q", got, tc.bus)
			}
		})
	}
	b.mu.Lock()
	b.fail["g14"] = true
	b.mu.Unlock()
	code, out, errOut := mesh(t, append([]string{"push"}, s.flags()...)...)
	if code != exitFailed || !strings.Contains(out, "g14: push failed: ") || !strings.Contains(out, "novox: pushed") || !strings.Contains(errOut, "1 of 2 push(es) failed") {
		t.Fatalf("a failed send: exit %d\n%s%s", code, out, errOut)
	}
}
