package main

import (
	"encoding/json"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/events"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/projections"
)

// TestProcessTokens: against a running mesh up, the bootstrap token is
// recorded as admin's; mesh token create prints a token whose writes are
// recorded as its operator's, whatever MESH_OPERATOR says; token list
// shows every token (golden); after mesh token revoke the next request
// with it exits non-zero naming the revocation.
func TestProcessTokens(t *testing.T) {
	data := t.TempDir()
	c := meshtest.StartCtl(t, data, freeport.Addr(t), freeport.Addr(t))
	defer c.Stop(t)
	boot := append(c.Env(), "MESH_OPERATOR=root")

	code, _, errOut := meshtest.CLI(t, []string{"MESH_SERVER=", "MESH_DATA=" + t.TempDir()}, "token", "list")
	if code != exitUsage || !strings.Contains(errOut, "needs --server") {
		t.Errorf("token list in local mode: exit %d, %s; want usage naming --server", code, errOut)
	}

	code, out, errOut := meshtest.CLI(t, boot, "token", "create", "alice")
	if code != exitOK {
		t.Fatalf("token create: exit %d\n%s%s", code, out, errOut)
	}
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, "mtk_") || strings.Count(out, "\n") != 1 || !strings.Contains(errOut, "operator alice") {
		t.Fatalf("token create printed %q on stdout, %q on stderr", out, errOut)
	}
	alice := []string{"MESH_SERVER=" + c.URL, "MESH_TOKEN=" + secret, "MESH_DATA=" + data, "MESH_OPERATOR=mallory"}
	meshtest.MustCLI(t, alice, "node", "register", "n1")
	meshtest.MustCLI(t, boot, "node", "register", "n2")

	var tl []projections.Entry
	if err := json.Unmarshal([]byte(meshtest.MustCLI(t, boot, "timeline", "-o", "json", "--type", events.TypeNodeRegistered)), &tl); err != nil {
		t.Fatal(err)
	}
	actors := map[string]string{}
	for _, e := range tl {
		actors[e.Node] = e.Actor
	}
	if actors["n1"] != "operator:alice" || actors["n2"] != "operator:root" {
		t.Errorf("registered by %v; want n1 by operator:alice (its token), n2 by operator:root (the bootstrap token keeps the declared operator)", actors)
	}

	meshtest.MustCLI(t, boot, "token", "revoke", "alice")
	code, out, errOut = meshtest.CLI(t, alice, "status")
	if code == exitOK || !strings.Contains(errOut, "revoked") {
		t.Errorf("a request with a revoked token: exit %d\n%s%s; want a failure naming the revocation", code, out, errOut)
	}

	list := meshtest.MustCLI(t, boot, "token", "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 3 ||
		!strings.HasPrefix(lines[1], "admin ") || !strings.Contains(lines[1], " controller ") ||
		!strings.HasPrefix(lines[2], "alice ") || !strings.Contains(lines[2], " by operator:root") {
		t.Errorf("token list:\n%s\nwant admin by controller, alice revoked by operator:root", list)
	}

	var js struct {
		Tokens []struct{ Name, By string } `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(meshtest.MustCLI(t, boot, "token", "list", "-o", "json")), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Tokens) != 2 || js.Tokens[0].Name != "admin" || js.Tokens[0].By != "controller" || js.Tokens[1].By != "operator:root" {
		t.Errorf("token list -o json: %+v; want admin by controller, alice by operator:root", js.Tokens)
	}
}

// TestDaemonBootstrapTokenOnce: the bootstrap token is recorded as admin's
// at the first start only; after a restart on the same data it is still
// one token, and a per-operator token made before the restart is still
// known (from history).
func TestDaemonBootstrapTokenOnce(t *testing.T) {
	data := t.TempDir()
	d := meshtest.StartDaemon(t, data, "")
	made, err := d.Client.CreateToken(t.Context(), api.CreateTokenRequest{Operator: "root", Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	d.Stop(t)
	d2 := meshtest.StartDaemon(t, data, "")
	list, err := d2.Client.Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tokens) != 2 || list.Tokens[0].Name != "admin" || list.Tokens[0].By != "controller" || list.Tokens[1].Name != "alice" {
		t.Errorf("tokens after a restart: %+v; want admin (by controller) once, then alice", list.Tokens)
	}
	alice, err := httpapi.NewClient(d2.Ready.APIURL, made.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Status(t.Context(), api.StatusRequest{}); err != nil {
		t.Errorf("alice's token after a restart: %v", err)
	}
}
