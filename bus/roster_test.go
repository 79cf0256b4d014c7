package bus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
	"meshplane/internal/gz"
	"meshplane/internal/testwait"
)

func routesN(n int) []declaration.Route {
	out := make([]declaration.Route, n)
	for i := range out {
		out[i] = declaration.Route{Name: fmt.Sprintf("name-%06d.mesh.example", i), Address: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Node: fmt.Sprintf("node-%05d", i%10000)}
	}
	return out
}

// composedAgainst is node's declaration n composed against roster r, as
// the controller pushes it: carrying the roster, naming its revision.
func composedAgainst(node string, n int, r declaration.Roster) declaration.Declaration {
	d := decl(node, n)
	d.Roster, d.Hosts, d.RosterRevision, d.RosterDigest = r.Routes, r.Hosts(), r.Revision, r.Digest
	d.Digest = d.SpecDigest()
	return d
}

// heardHolding has node's heartbeat heard by ctl (subscribed) and waits
// until ctl sends node's declarations without their roster.
func heardHolding(t *testing.T, ctl *bus.ControllerConn, n *bus.Node) {
	t.Helper()
	if err := n.Heartbeat(time.Now(), "test"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, func() error {
		if !bus.HoldsRoster(ctl, n.Name()) {
			return fmt.Errorf("the controller does not know %s holds roster %d", n.Name(), n.HeldRoster())
		}
		return nil
	})
}

// TestRosterTravelsOnce: declarations composed against a roster revision
// put the roster once, as the shared value; a node not known to hold a
// roster gets its declaration whole, and once its heartbeat says it holds
// one, its declarations travel without it and it fills them from that
// value, hosts file and all.
func TestRosterTravelsOnce(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	hb, err := ctl.SubscribeHeartbeats(func(string, bus.Heartbeat) {})
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Stop()
	r1 := declaration.NewRoster(1, routesN(3))
	nodes := []string{"a", "b", "c"}
	var ds []declaration.Declaration
	for _, n := range nodes {
		ds = append(ds, composedAgainst(n, 1, r1))
	}
	if errs := ctl.PutDeclarations(ctx, ds); errs != nil {
		t.Fatal(errs)
	}
	got, rev1, err := ctl.Roster(ctx)
	if err != nil || got.Revision != 1 || got.Digest != r1.Digest || got.Hosts() != r1.Hosts() {
		t.Fatalf("roster value: revision %d, %v", got.Revision, err)
	}
	for i, name := range nodes {
		n := natstest.Node(t, s, name)
		d, _, err := n.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Hosts != r1.Hosts() || len(d.Roster) != len(r1.Routes) {
			t.Fatalf("%s, not heard of, got its declaration without its roster (%d bytes of hosts)", name, len(d.Hosts))
		}
		if _, _, err := n.Roster(ctx); err != nil || n.HeldRoster() != 1 {
			t.Fatalf("%s read the roster: held %d, %v", name, n.HeldRoster(), err)
		}
		heardHolding(t, ctl, n)
		ds[i] = composedAgainst(name, 2, r1)
	}
	if errs := ctl.PutDeclarations(ctx, ds); errs != nil {
		t.Fatal(errs)
	}
	for _, name := range nodes {
		n := natstest.Node(t, s, name)
		d, _, err := n.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !d.NamesRoster() || d.Hosts != "" || d.Roster != nil {
			t.Fatalf("%s's declaration travelled with its roster (%d bytes of hosts)", name, len(d.Hosts))
		}
		held, _, err := n.Roster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		filled, err := d.Fill(held)
		if err != nil || filled.Hosts != r1.Hosts() || filled.Digest != ds[0].Digest && name == "a" {
			t.Fatalf("%s fills: %v", name, err)
		}
	}

	// The same roster again (a pass that changed one node): not put again.
	if _, err := ctl.PutDeclaration(ctx, composedAgainst("a", 3, r1)); err != nil {
		t.Fatal(err)
	}
	if _, rev, _ := ctl.Roster(ctx); rev != rev1 {
		t.Fatalf("the roster value was put again for the same revision: bucket revision %d, was %d", rev, rev1)
	}

	// A new revision is put before the declarations that name it, and a
	// watching node sees it.
	n := natstest.Node(t, s, "a")
	rw, err := n.WatchRoster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()
	if r := nextRoster(t, rw); r.Revision != 1 {
		t.Fatalf("watch gave revision %d first, want 1", r.Revision)
	}
	r2 := declaration.NewRoster(2, routesN(4))
	if _, err := ctl.PutDeclaration(ctx, composedAgainst("a", 4, r2)); err != nil {
		t.Fatal(err)
	}
	if r := nextRoster(t, rw); r.Revision != 2 || r.Hosts() != r2.Hosts() {
		t.Fatalf("watch gave revision %d, want 2", r.Revision)
	}

	// A declaration carrying its roster and naming no revision (an older
	// controller's) travels as it is.
	old := decl("c", 5)
	old.Roster, old.Hosts = r1.Routes, r1.Hosts()
	if _, err := ctl.PutDeclaration(ctx, old); err != nil {
		t.Fatal(err)
	}
	if d, _, err := natstest.Node(t, s, "c").Latest(ctx); err != nil || d.Hosts != r1.Hosts() {
		t.Fatalf("an older declaration lost its hosts file: %v", err)
	}
	if r, _, _ := ctl.Roster(ctx); r.Revision != 2 {
		t.Fatalf("an older declaration moved the roster value to %d", r.Revision)
	}
}

func nextRoster(t *testing.T, w *bus.RosterWatch) declaration.Roster {
	t.Helper()
	return nextOf(t, w.Updates(), "roster")
}

// TestRosterBig: 30,000 routes (10,000 nodes serving 2,000 names, 15
// each) fit in 1 MiB gzipped, what a NATS cluster's default max_payload
// takes.
func TestRosterBig(t *testing.T) {
	r := declaration.NewRoster(1, routesN(30000))
	b, err := bus.EncodeRoster(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1<<20-4<<10 {
		t.Fatalf("30,000 routes are %d bytes gzipped, over 1 MiB", len(b))
	}
	back, err := bus.DecodeRoster(b)
	if err != nil || back.Digest != r.Digest || back.Hosts() != r.Hosts() {
		t.Fatalf("decode: %v", err)
	}
}

// TestRosterPermissions holds NodePermissions for the roster value with a
// node's real credentials: it can read and watch it, and cannot put it.
func TestRosterPermissions(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	r := declaration.NewRoster(1, routesN(2))
	if _, err := ctl.PutDeclaration(ctx, composedAgainst("a", 1, r)); err != nil {
		t.Fatal(err)
	}
	n := natstest.Node(t, s, "a")
	if got, _, err := n.Roster(ctx); err != nil || got.Digest != r.Digest {
		t.Fatalf("a node reads the roster: %v", err)
	}
	w, err := n.WatchRoster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := nextRoster(t, w); got.Digest != r.Digest {
		t.Fatal("watched another roster")
	}

	nc, errs := rawNode(t, s, "a")
	t.Run("cannot publish the roster's subject", func(t *testing.T) {
		if err := nc.Publish(bus.RosterSubject, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		violation(t, errs, bus.RosterSubject)
	})
	t.Run("cannot put the roster through the bucket", func(t *testing.T) {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		forged, _ := bus.EncodeRoster(declaration.NewRoster(9, routesN(1)))
		if _, err := js.Publish(short, bus.RosterSubject, forged); err == nil {
			t.Fatal("a node put the roster value")
		}
		if got, _, err := ctl.Roster(ctx); err != nil || got.Revision != 1 {
			t.Fatalf("the roster value is now revision %d, %v", got.Revision, err)
		}
	})
	t.Run("still cannot read another node's key", func(t *testing.T) {
		if _, err := ctl.PutDeclaration(ctx, decl("b", 1)); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if m, err := nc.RequestWithContext(short, "$JS.API.DIRECT.GET.KV_"+bus.DeclarationsBucket+"."+bus.DeclarationSubject("b"), nil); err == nil {
			t.Fatalf("got b's declaration: %s", m.Data)
		}
	})
}

// TestDecodeRosterRefuses: damage is refused with ErrBadRosterValue saying
// what is wrong.
func TestDecodeRosterRefuses(t *testing.T) {
	good, err := bus.EncodeRoster(declaration.NewRoster(3, routesN(3)))
	if err != nil {
		t.Fatal(err)
	}
	truncated := good[:len(good)-9]
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	other := declaration.NewRoster(3, routesN(3))
	other.Digest = declaration.RosterDigest(routesN(2))
	forged, _ := json.Marshal(other)
	for _, tc := range []struct {
		name, says string
		b          []byte
	}{
		{"empty", "not gzip", nil},
		{"plain JSON", "not gzip", []byte(`{"revision":1}`)},
		{"truncated", "gunzip", truncated},
		{"a flipped byte", "", flipped},
		{"not JSON", "invalid character", gz.Compress([]byte("hosts"))},
		{"no routes", "no routes list", gz.Compress([]byte(`{"revision":1,"digest":"x"}`))},
		{"revision 0", "revision 0", gz.Compress([]byte(`{"revision":0,"digest":"x","routes":[]}`))},
		{"another digest", "digest", gz.Compress(forged)},
		{"trailing bytes", "invalid character", gz.Compress(append(append([]byte{}, `{"revision":1,"routes":[]}`...), " x"...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bus.DecodeRoster(tc.b)
			if !errors.Is(err, bus.ErrBadRosterValue) {
				t.Fatalf("DecodeRoster = %v, want ErrBadRosterValue", err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

// TestRosterOnlyToHolders: a node whose credentials predate the shared
// roster may not read it (refused before asking the server, with
// ErrRosterNotPermitted; its agent link gives no roster source), its
// heartbeats say it holds none, and its declarations keep travelling
// whole, so it writes its hosts file as before; a node that said it held
// one and then says it holds none is sent whole declarations again.
func TestRosterOnlyToHolders(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	heard := make(chan bus.Heartbeat, 16)
	hb, err := ctl.SubscribeHeartbeats(func(_ string, h bus.Heartbeat) { heard <- h })
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Stop()
	r1 := declaration.NewRoster(1, routesN(3))

	user, err := bus.NodeBeforeRoster(s.Authority().Issuer(), "old")
	if err != nil {
		t.Fatal(err)
	}
	creds := natstest.Creds(t, s, "old")
	creds.JWT, creds.Seed = user.JWT, user.Seed
	old, err := bus.DialNode(ctx, creds, bus.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.WatchRoster(ctx); !errors.Is(err, bus.ErrRosterNotPermitted) {
		t.Fatalf("an old user's roster watch: %v, want ErrRosterNotPermitted", err)
	}
	if _, _, err := old.Roster(ctx); !errors.Is(err, bus.ErrRosterNotPermitted) {
		t.Fatalf("an old user's roster read: %v, want ErrRosterNotPermitted", err)
	}
	if ch, err := old.Agent().Rosters(ctx); ch != nil || err != nil {
		t.Fatalf("an old user's agent link: rosters %v, %v; want none, no error", ch, err)
	}
	if err := old.Heartbeat(time.Now(), "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-heard:
		if h.Node != "old" || h.Roster != 0 {
			t.Fatalf("the old node's heartbeat: %+v, want node old holding no roster", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat heard")
	}
	if _, err := ctl.PutDeclaration(ctx, composedAgainst("old", 1, r1)); err != nil {
		t.Fatal(err)
	}
	if d, _, err := old.Latest(ctx); err != nil || d.Hosts != r1.Hosts() {
		t.Fatalf("the old node's declaration: %d bytes of hosts, %v; want its whole hosts file", len(d.Hosts), err)
	}
	// The server refuses it the value too, whatever the node's code does.
	nc, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(user.JWT, user.Seed))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request("$JS.API.DIRECT.GET.KV_"+bus.DeclarationsBucket+"."+bus.RosterSubject, nil, 2*time.Second); err == nil {
		t.Fatal("an old user read the roster value off the server")
	}

	// A holder that says it holds none any more gets whole declarations.
	n := natstest.Node(t, s, "a")
	if _, err := ctl.PutDeclaration(ctx, composedAgainst("a", 1, r1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Roster(ctx); err != nil {
		t.Fatal(err)
	}
	heardHolding(t, ctl, n)
	if _, err := ctl.PutDeclaration(ctx, composedAgainst("a", 2, r1)); err != nil {
		t.Fatal(err)
	}
	if d, _, err := n.Latest(ctx); err != nil || d.Hosts != "" {
		t.Fatalf("a holder's declaration: %d bytes of hosts, %v; want none", len(d.Hosts), err)
	}
	// In the bucket: the holder's value gzipped, the old node's JSON.
	kv := controllerBucket(t, s)
	for node, zipped := range map[string]bool{"a": true, "old": false} {
		e, err := kv.Get(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		v := e.Value()
		if got := len(v) > 2 && v[0] == 0x1f && v[1] == 0x8b; got != zipped || !zipped && v[0] != '{' {
			t.Errorf("%s's value in the bucket starts %q: gzipped %v, want %v", node, v[:min(len(v), 8)], got, zipped)
		}
	}
	ca := natstest.Creds(t, s, "a")
	nc2, err := nats.Connect(s.URL(), nats.UserJWTAndSeed(ca.JWT, ca.Seed))
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	b, _ := json.Marshal(bus.Heartbeat{Node: "a", At: time.Now()})
	if err := nc2.Publish(bus.HeartbeatSubject("a"), b); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, func() error {
		if bus.HoldsRoster(ctl, "a") {
			return errors.New("still a holder after a heartbeat holding none")
		}
		return nil
	})
	if _, err := ctl.PutDeclaration(ctx, composedAgainst("a", 3, r1)); err != nil {
		t.Fatal(err)
	}
	if d, _, err := n.Latest(ctx); err != nil || d.Hosts != r1.Hosts() {
		t.Fatalf("a former holder's declaration: %d bytes of hosts, %v; want its whole hosts file", len(d.Hosts), err)
	}
}
