package bus_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/events"
	"meshplane/internal/testtls"
)

func TestCredsFile(t *testing.T) {
	s := natstest.Start(t)
	ca := testtls.New(t).CAPEM
	c, err := bus.NewCreds(s.Authority().Issuer(), "web.a", []string{"tls://10.0.0.1:4222", "tls://10.0.0.2:4222"}, ca)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "web.a.creds")
	if err := bus.WriteCreds(path, c); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o, want 0600", fi.Mode().Perm())
	}
	got, err := bus.LoadCreds(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != c.Node || got.JWT != c.JWT || got.Seed != c.Seed || got.CA != c.CA || strings.Join(got.URLs, " ") != strings.Join(c.URLs, " ") {
		t.Fatalf("loaded %+v\nwrote %+v", got, c)
	}
	nc, err := got.NATSCreds()
	if err != nil || !strings.Contains(string(nc), "BEGIN NATS USER JWT") || !strings.Contains(string(nc), c.Seed) {
		t.Fatalf("NATSCreds: %v\n%s", err, nc)
	}

	write := func(t *testing.T, body string, mode os.FileMode) string {
		p := filepath.Join(t.TempDir(), "c.creds")
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
		want error
	}{
		{"readable by others", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "c.creds")
			if err := bus.WriteCreds(p, c); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil},
		{"not JSON", func(t *testing.T) string { return write(t, "nope", 0o600) }, bus.ErrBadCreds},
		{"another version", func(t *testing.T) string { return write(t, `{"version":2}`, 0o600) }, bus.ErrBadCreds},
		{"no urls", func(t *testing.T) string {
			return write(t, `{"version":1,"node":"web.a","jwt":"`+c.JWT+`","seed":"`+c.Seed+`"}`, 0o600)
		}, bus.ErrBadCreds},
		{"another node's name", func(t *testing.T) string {
			return write(t, `{"version":1,"node":"web.b","urls":["nats://x:1"],"jwt":"`+c.JWT+`","seed":"`+c.Seed+`"}`, 0o600)
		}, bus.ErrBadCreds},
		{"a CA that is no PEM", func(t *testing.T) string {
			return write(t, `{"version":1,"node":"web.a","urls":["nats://x:1"],"jwt":"`+c.JWT+`","seed":"`+c.Seed+`","ca":"nope"}`, 0o600)
		}, bus.ErrBadCreds},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bus.LoadCreds(tc.path(t))
			if err == nil {
				t.Fatal("loaded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
		})
	}
}

func TestValidNode(t *testing.T) {
	for _, tc := range []struct {
		node string
		ok   bool
	}{
		{"node-001", true}, {"web.zurag", true}, {"a_b", true}, {"0", true},
		{"", false}, {"Web", false}, {"a b", false}, {"a*", false}, {"a>", false},
		{".a", false}, {"a.", false}, {"a..b", false}, {"-a", false}, {strings.Repeat("a", 64), false},
	} {
		t.Run(tc.node, func(t *testing.T) {
			err := bus.ValidNode(tc.node)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, bus.ErrBadNode)) {
				t.Fatalf("ValidNode(%q) = %v, want ok=%v", tc.node, err, tc.ok)
			}
		})
	}
}

// FuzzValidNodeAcceptsEveryName: the bus accepts every name the door
// accepts (events.CheckName), so no node the mesh registers is refused on
// the bus after it was recorded; and whatever ValidNode accepts is one
// subject token or more, never an empty one or a wildcard.
func FuzzValidNodeAcceptsEveryName(f *testing.F) {
	for _, s := range []string{"novox", "g14", "0", "route-proxy", strings.Repeat("a", 63), "x..y", "web.a", "a_b", "a-", "-a", "Web", "a*", "a>", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, node string) {
		err := bus.ValidNode(node)
		if events.CheckName("node", node) == nil && err != nil {
			t.Fatalf("CheckName accepts %q, ValidNode refuses it: %v", node, err)
		}
		if err != nil {
			if !errors.Is(err, bus.ErrBadNode) {
				t.Fatalf("ValidNode(%q) = %v, not ErrBadNode", node, err)
			}
			return
		}
		for _, tok := range strings.Split(node, ".") {
			if tok == "" || strings.ContainsAny(tok, "*> \t\r\n") {
				t.Fatalf("ValidNode accepts %q, which makes the subject token %q", node, tok)
			}
		}
	})
}

func TestNodeInboxIsOneToken(t *testing.T) {
	for _, node := range []string{"web", "web.a", "web.a.b"} {
		inbox := bus.NodeInbox(node)
		if strings.Count(inbox, ".") != 2 {
			t.Errorf("NodeInbox(%q) = %q: the node is not one token", node, inbox)
		}
	}
	if bus.NodeInbox("web.a") == bus.NodeInbox("web_a") || bus.NodeInbox("web.a") == bus.NodeInbox("web-a") {
		t.Error("two nodes share an inbox")
	}
}

func TestParseNATSCreds(t *testing.T) {
	s := natstest.Start(t)
	c := natstest.Creds(t, s, "n1")
	b, err := c.NATSCreds()
	if err != nil {
		t.Fatal(err)
	}
	u, err := bus.ParseNATSCreds(b)
	if err != nil || u != c.User() {
		t.Fatalf("ParseNATSCreds = %+v, %v; want %+v", u, err, c.User())
	}
	if _, err := bus.ParseNATSCreds([]byte("nope")); err == nil {
		t.Fatal("parsed garbage")
	}
}

// TestExternalController dials the bus as an operator of an external NATS
// would have the controller do: by URL, with a user from a .creds file and a
// signing key it mints node users with (here the account's own key).
func TestExternalController(t *testing.T) {
	dir := t.TempDir()
	s := natstest.Start(t, func(c *bus.ServerConfig) { c.Dir = dir })
	seed, err := os.ReadFile(filepath.Join(dir, "mesh-account.nk"))
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := bus.NewIssuer(seed, "")
	if err != nil {
		t.Fatal(err)
	}
	cu, err := issuer.Controller()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	ctl, err := bus.DialController(ctx, bus.ControllerConnConfig{URLs: []string{s.URL()}, User: cu})
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if _, err := ctl.PutDeclaration(ctx, decl("n1", 1)); err != nil {
		t.Fatal(err)
	}
	nc, err := bus.NewCreds(issuer, "n1", []string{s.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := bus.DialNode(ctx, nc, bus.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if d, _, err := n.Latest(ctx); err != nil || d.ID != "n1/1" {
		t.Fatalf("Latest: %s, %v", d.ID, err)
	}
	if _, err := bus.NewIssuer([]byte("SUAxxx"), ""); err == nil {
		t.Fatal("an issuer from a bad seed")
	}
}
