package main

import (
	"regexp"
	"strings"
	"testing"

	"meshplane/events"
)

// chainStore is a data directory holding a small simulated history.
func chainStore(t *testing.T) (string, events.ChainHead) {
	t.Helper()
	dir := t.TempDir()
	if code, out, errOut := mesh(t, "sim", "--data", dir, "--nodes", "2", "--modules", "3", "--passes", "2", "--faults", "none"); code != exitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mesh(t, "store", "head", "--data", dir)
	if code != exitOK {
		t.Fatalf("store head: exit %d\n%s%s", code, out, errOut)
	}
	head, err := events.ParseChainHead(out)
	if err != nil {
		t.Fatal(err)
	}
	return dir, head
}

// TestStoreVerifyAnchorUsage: an empty anchor (--anchor "$(cat head.txt)"
// of a missing file) or one that is not a head line is a wrong command
// line (exit 2), never a plain verify that passes.
func TestStoreVerifyAnchorUsage(t *testing.T) {
	dir, _ := chainStore(t)
	for _, c := range []struct{ name, anchor, want string }{
		{"empty", "", "--anchor is empty"},
		{"blank", "  \n", "--anchor is empty"},
		{"nonsense", "nonsense", "head line"},
		{"cut", "meshplane-head position=12", "head line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := mesh(t, "store", "verify", "--data", dir, "--anchor", c.anchor)
			if code != exitUsage || !strings.Contains(errOut, c.want) || out != "" {
				t.Errorf("verify --anchor %q: exit %d, stdout %q, stderr %q; want exit %d naming %q", c.anchor, code, out, errOut, exitUsage, c.want)
			}
		})
	}
}

var chainValueRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// TestStoreVerifyAnchorDiffers: an anchor whose chain value the history
// does not have at its position (a rewrite that recomputed the chain,
// another store's anchor) says only that: no position is named intact or
// first bad (exit 1).
func TestStoreVerifyAnchorDiffers(t *testing.T) {
	dir, head := chainStore(t)
	other := head
	other.Chain = events.Hash{0x77, 31: 0x01}
	code, out, errOut := mesh(t, "store", "verify", "--data", dir, "--anchor", other.String())
	if code != exitFailed || !strings.Contains(errOut, "does not end at the anchor's chain value") {
		t.Errorf("verify --anchor of another chain value: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, other.Chain.String()) || !strings.Contains(out, head.Chain.String()) {
		t.Errorf("the output names neither chain value:\n%s", out)
	}
	out = strings.ReplaceAll(out, other.Chain.String(), "sha256:ANCHOR")
	golden(t, "store-verify-anchor-differs", chainValueRE.ReplaceAllString(out, "sha256:HISTORY"), dir)
}
