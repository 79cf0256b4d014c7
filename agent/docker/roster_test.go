package docker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/declaration"
)

// rosterSource yields the rosters sent on it.
type rosterSource chan declaration.Roster

func (s rosterSource) Rosters(context.Context) (<-chan declaration.Roster, error) { return s, nil }

// wireDecl is node's declaration id against roster ro, as it travels: it
// names ro's revision and carries neither the roster nor the hosts file.
func wireDecl(node, id string, ro declaration.Roster, rs ...declaration.Resource) declaration.Declaration {
	d := decl(node, id, ro.Hosts(), rs...)
	d.Roster, d.RosterRevision, d.RosterDigest = ro.Routes, ro.Revision, ro.Digest
	d.Digest = d.SpecDigest()
	return d.Wire()
}

// TestRosterOnTheWireRecreatesNothing (rule 2, the roster travelling
// once): on the real engine, a running agent fills each declaration from
// the shared roster it watches; a new roster revision and the declaration
// naming it rewrite the hosts file in place (same inode), the running
// container reads the new names, and no container is recreated, restarted
// or counted.
func TestRosterOnTheWireRecreatesNothing(t *testing.T) {
	r := newRT(t)
	src, ros, rs := make(oneSource, 1), make(rosterSource, 1), make(reports, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.RunConfig{
			Node: r.node, Runtime: r.Runtime, Outbox: agent.NewMemOutbox(), Source: src, Rosters: ros, Reporter: rs,
			Interval: time.Hour, RosterWait: time.Minute,
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	}()
	r1 := declaration.NewRoster(1, []declaration.Route{{Name: "searxng.zurag.be", Address: "10.1.0.3", Node: "g14"}})
	rsrc := forge("/srv/forge")
	ros <- r1
	src <- wireDecl(r.node, "1", r1, rsrc...)
	if o := nextReport(t, rs, 90*time.Second, "first apply"); len(o.Created) != 3 || len(o.Failed) != 0 {
		t.Fatalf("first apply: %+v", o)
	}
	before := r.inspect(t, "web")
	if got := rosterSeen(t, r, "web"); got != r1.Hosts() {
		t.Fatalf("container reads /etc/hosts = %q, want %q", got, r1.Hosts())
	}
	hostsFile := filepath.Join(r.root, declaration.HostsPath)
	ino := inode(t, hostsFile)

	r2 := declaration.NewRoster(2, append(append([]declaration.Route{}, r1.Routes...), declaration.Route{Name: "zz.novox.be", Address: "10.1.0.4", Node: "novox"}))
	// The declaration first, its roster after (two keys, two watches):
	// it waits for the roster, then applies.
	src <- wireDecl(r.node, "2", r2, rsrc...)
	time.Sleep(200 * time.Millisecond)
	if got := rosterSeen(t, r, "web"); got != r1.Hosts() {
		t.Fatalf("the hosts file moved before its roster came: %q", got)
	}
	ros <- r2
	o := nextReport(t, rs, 90*time.Second, "the roster change")
	noChange(t, o)
	if o.Declaration != r.node+"/2" {
		t.Fatalf("applied %s, want %s/2", o.Declaration, r.node)
	}
	if after := r.inspect(t, "web"); after.ID != before.ID || after.State.StartedAt != before.State.StartedAt {
		t.Fatal("a roster change recreated or restarted web")
	}
	if got := inode(t, hostsFile); got != ino {
		t.Fatalf("hosts file replaced (inode %d, then %d): a running container keeps the old one", ino, got)
	}
	if got := rosterSeen(t, r, "web"); got != r2.Hosts() {
		t.Fatalf("running container reads /etc/hosts = %q, want the new roster %q", got, r2.Hosts())
	}
}
