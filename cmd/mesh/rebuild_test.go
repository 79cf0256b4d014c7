package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections/snapstore"
)

// A local rebuild of every projection leaves the data directory's
// snapshot at the head: the next snapstore.Open folds nothing, with no
// note. A rebuild of some projections checks them and saves nothing.
func TestRebuildLocalSavesSnapshot(t *testing.T) {
	dir := upExample(t)
	for _, tc := range []struct {
		args  []string
		out   string
		saved bool
	}{
		{[]string{"rebuild", "roster", "status"}, "rebuilt roster, status from", false},
		{[]string{"rebuild"}, "saved the snapshot of every projection at position", true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := mesh(t, append(tc.args, "--data", dir)...)
			if code != exitOK || !strings.Contains(out, tc.out) || strings.Contains(out, "saved the snapshot") != tc.saved {
				t.Fatalf("exit %d, want 0 with %q (saved: %v)\n%s%s", code, tc.out, tc.saved, out, errOut)
			}
		})
	}
	s, err := boltstore.Open(filepath.Join(dir, "events.db"), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := snapstore.Open(ctx, s, events.NewRegistry(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.From != head || len(l.Notes) > 0 {
		t.Errorf("snapstore loaded at %d with notes %q; want the head %d and no note", l.From, l.Notes, head)
	}
}

// Against a running controller, rebuild asks it to rebuild in the shadow.
func TestRebuildRemote(t *testing.T) {
	dir := upExample(t)
	srv := startServer(t, dir)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"rebuild"}, exitOK, "rebuilt every projection in the shadow from"},
		{[]string{"rebuild", "holds"}, exitOK, "  holds     same as before"},
		{[]string{"rebuild", "rooster"}, exitUsage, `no projection "rooster"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := mesh(t, append(tc.args, srv.flags()...)...)
			if code != tc.code || !strings.Contains(out+errOut, tc.out) {
				t.Fatalf("exit %d, want %d with %q\n%s%s", code, tc.code, tc.out, out, errOut)
			}
		})
	}
}
