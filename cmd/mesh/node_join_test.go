package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/bus"
	"meshplane/controllerd"
	"meshplane/internal/meshtest"
)

// TestNodeJoinTokenAndRevoke: against a running controller, join-token
// prints the token alone on stdout and the host's commands on stderr
// (golden, the token and times replaced); node register --creds asks the
// controller for the credentials; revoke names the key it revoked; and
// node register --creds on a directory with no trust root is refused,
// naming it, before anything is written.
func TestNodeJoinTokenAndRevoke(t *testing.T) {
	data := t.TempDir()
	d := meshtest.StartDaemon(t, data, "")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(d.Ready.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MESH_OPERATOR", "ana")
	srv := []string{"--server", d.Ready.APIURL, "--token-file", tokenFile}

	code, out, errOut := mesh(t, append([]string{"node", "join-token", "n4", "--ttl", "10m"}, srv...)...)
	if code != 0 {
		t.Fatalf("join-token: exit %d: %s", code, errOut)
	}
	tokLine := strings.TrimSpace(out)
	tok, err := api.ParseJoinToken(tokLine)
	if err != nil || strings.Count(out, "\n") != 1 || tok.Node != "n4" || tok.URL != d.Ready.APIURL {
		t.Fatalf("join-token printed %q: %+v, %v", out, tok, err)
	}
	hint := strings.ReplaceAll(errOut, tokLine, "TOKEN")
	hint = strings.ReplaceAll(hint, d.Ready.APIURL, "URL")
	hint = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(hint, "TIME")
	golden(t, "node_join_token", hint, data)

	if code, _, errOut := mesh(t, append([]string{"node", "join-token", "n4", "--ttl", "0s"}, srv...)...); code != exitUsage || !strings.Contains(errOut, "--ttl") {
		t.Fatalf("join-token --ttl 0s: exit %d: %s", code, errOut)
	}

	credsFile := filepath.Join(t.TempDir(), "n4.creds")
	if code, _, errOut := mesh(t, append([]string{"node", "register", "n4", "--creds", credsFile}, srv...)...); code != 0 {
		t.Fatalf("register --creds --server: exit %d: %s", code, errOut)
	}
	c, err := bus.LoadCreds(credsFile)
	if err != nil || c.Node != "n4" {
		t.Fatalf("the credentials the controller minted: %+v, %v", c, err)
	}
	pub, err := bus.UserPublicKey(c.JWT)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = mesh(t, append([]string{"node", "revoke", "n4"}, srv...)...)
	if code != 0 || out != "revoked "+pub+" of node n4\n" {
		t.Fatalf("revoke: exit %d: %q %s", code, out, errOut)
	}
	code, out, _ = mesh(t, append([]string{"node", "show", "n4"}, srv...)...)
	if code != 0 || !strings.Contains(out, "join tokens:") || !strings.Contains(out, pub+"  revoked") {
		t.Fatalf("node show: exit %d:\n%s", code, out)
	}

	empty := t.TempDir()
	code, _, errOut = mesh(t, "node", "register", "n5", "--creds", filepath.Join(t.TempDir(), "n5.creds"), "--data", empty)
	if code == 0 || !strings.Contains(errOut, filepath.Join(empty, controllerd.BusDir)) || !strings.Contains(errOut, "join-token n5") {
		t.Fatalf("register --creds without a trust root: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(empty, controllerd.BusDir)); !os.IsNotExist(err) {
		t.Fatalf("register --creds made a trust root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "events.db")); !os.IsNotExist(err) {
		t.Fatalf("register --creds wrote the store before refusing: %v", err)
	}
}
