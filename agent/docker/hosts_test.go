package docker_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/agent/docker"
)

// rosterSeen is the roster part of what container name of r reads at
// /etc/hosts, failing t when the engine's own lines are not above it.
func rosterSeen(t testing.TB, r rt, name string) string {
	t.Helper()
	got := r.exec(t, name, "cat", "/etc/hosts")
	head, roster, ok := strings.Cut(got, docker.RosterMark)
	if !ok || !strings.HasPrefix(head, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n") {
		t.Fatalf("container %s reads /etc/hosts = %q: not the engine's lines, then the roster", name, got)
	}
	return roster
}

// TestContainerSeesEngineHosts: on the real engine, what a container reads
// at /etc/hosts keeps what the engine's own file holds (localhost, the IPv6
// names, its own host name at its address) beside the roster; a roster
// change rewrites the roster part in place (same inode) and keeps the rest.
func TestContainerSeesEngineHosts(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	rs := forge("/srv/forge")
	apply(t, ag, decl(r.node, "1", hosts1, rs...))
	in := r.inspect(t, "web")
	var own string
	for _, n := range in.NetworkSettings.Networks {
		own = fmt.Sprintf("%s\t%s\n", n.IPAddress, in.Config.Hostname)
	}
	got := r.exec(t, "web", "cat", "/etc/hosts")
	for _, line := range []string{"127.0.0.1\tlocalhost\n", "::1\tlocalhost ip6-localhost ip6-loopback\n", own, hosts1} {
		if !strings.Contains(got, line) {
			t.Errorf("container reads /etc/hosts = %q, without %q", got, line)
		}
	}
	own1 := filepath.Join(r.root, docker.HostsDir, "web")
	ino := inode(t, own1)

	hosts2 := hosts1 + "10.1.0.4\tdrive.novox.be\n"
	noChange(t, apply(t, ag, decl(r.node, "2", hosts2, rs...)))
	if got := inode(t, own1); got != ino {
		t.Fatalf("the container's hosts file was replaced (inode %d, then %d): the running container keeps the old one", ino, got)
	}
	got = r.exec(t, "web", "cat", "/etc/hosts")
	if !strings.Contains(got, own) || !strings.HasSuffix(got, docker.RosterMark+hosts2) {
		t.Fatalf("after a roster change the container reads /etc/hosts = %q, want its own line %q and the new roster", got, own)
	}
	if n := r.inspect(t, "web"); n.ID != in.ID || n.State.StartedAt != in.State.StartedAt {
		t.Fatal("a roster change recreated or restarted web")
	}
}
