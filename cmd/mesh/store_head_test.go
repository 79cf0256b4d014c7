package main

import (
	"strings"
	"testing"

	"meshplane/events"
)

// TestStoreHeadAnchor: store head prints a line that store verify
// --anchor takes back and passes; an anchor past the head fails (exit 1)
// naming the first position missing; a line that is not a head is a
// usage error.
func TestStoreHeadAnchor(t *testing.T) {
	dir := upExample(t)
	code, out, errOut := mesh(t, "store", "head", "--data", dir)
	if code != exitOK {
		t.Fatalf("store head: exit %d\n%s%s", code, out, errOut)
	}
	head, err := events.ParseChainHead(out)
	if err != nil || head.Position == 0 || head.Chain.IsZero() {
		t.Fatalf("store head printed %q: %v", out, err)
	}
	code, out, errOut = mesh(t, "store", "verify", "--data", dir, "--anchor", head.String())
	if code != exitOK || !strings.Contains(out, "intact up to the anchor") {
		t.Fatalf("verify --anchor of its own head: exit %d\n%s%s", code, out, errOut)
	}
	later := head
	later.Position += 3
	code, out, _ = mesh(t, "store", "verify", "--data", dir, "--anchor", later.String())
	if code != 1 || !strings.Contains(out, "NOT INTACT at position") || !strings.Contains(out, "truncated") {
		t.Errorf("verify --anchor past the head: exit %d\n%s", code, out)
	}
	if code, _, errOut = mesh(t, "store", "verify", "--data", dir, "--anchor", "nonsense"); code == exitOK || !strings.Contains(errOut, "head line") {
		t.Errorf("verify --anchor nonsense: exit %d, %s", code, errOut)
	}
}
