package docker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"meshplane/agent"
	"meshplane/agent/docker"
)

// withLabels gives a runtime Options.Labels.
func withLabels(l map[string]string) rtOption { return func(o *docker.Options) { o.Labels = l } }

// TestOtherMeshesAreLeftAlone: two meshes on one engine whose nodes have
// the same name (two data directories each running `mesh up`'s local),
// told apart by their data directory's label: what each makes carries its
// own, and neither lists, changes or removes the other's. A container
// without the label (made before it was given) is still its node's.
func TestOtherMeshesAreLeftAlone(t *testing.T) {
	setup(t)
	node := randomNode(t)
	a := newRTFor(t, node, node+"-a-", t.TempDir(), eng, withLabels(map[string]string{agent.LabelData: "aaaa"}))
	b := newRTFor(t, node, node+"-b-", t.TempDir(), eng, withLabels(map[string]string{agent.LabelData: "bbbb"}))
	agA, agB := newAgent(t, a, node), newAgent(t, b, node)
	ctx := context.Background()

	if o := apply(t, agA, decl(node, "1", hosts1, forge("/srv/forge")...)); len(o.Failed) != 0 {
		t.Fatalf("a's apply failed: %+v", o.Failed)
	}
	in := a.inspect(t, "web")
	if got := in.Config.Labels[agent.LabelData]; got != "aaaa" {
		t.Errorf("a's container carries %s=%q, want aaaa", agent.LabelData, got)
	}
	if got := in.Config.Labels[agent.LabelNode]; got != node {
		t.Errorf("a's container carries %s=%q", agent.LabelNode, got)
	}
	nw, err := eng.NetworkInspect(ctx, a.EngineName("mesh"), network.InspectOptions{})
	if err != nil || nw.Labels[agent.LabelData] != "aaaa" || nw.Labels[agent.LabelNode] != node {
		t.Errorf("a's network labels %v (%v), want the node's and aaaa", nw.Labels, err)
	}

	// b sees nothing of a's, and its apply of nothing removes nothing.
	if got, err := b.ListContainers(ctx); err != nil || len(got) != 0 {
		t.Fatalf("b lists %+v (%v), want nothing", got, err)
	}
	if o := apply(t, agB, decl(node, "1", "")); len(o.Removed) != 0 {
		t.Fatalf("b removed %v", o.Removed)
	}
	if err := b.RemoveContainer(ctx, "web"); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("b removes a's web: %v, want ErrNotFound", err)
	}
	if in := a.inspect(t, "web"); !in.State.Running {
		t.Fatal("b's apply stopped a's web")
	}

	// A container of the node without the label (an agent's before it had
	// one) is taken as its own by both, as before there was a label.
	c, err := eng.ContainerCreate(ctx, &container.Config{Image: testRef, Labels: map[string]string{
		agent.LabelManaged: "true", agent.LabelNode: node, agent.LabelResource: "legacy",
	}}, nil, nil, nil, a.prefix+"legacy")
	if err != nil {
		t.Fatal(err)
	}
	listed := func(r rt) []string {
		got, err := r.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		return names
	}
	if got := listed(a); !slices.Equal(got, []string{"legacy", "web"}) {
		t.Errorf("a lists %v, want [legacy web]", got)
	}
	if got := listed(b); !slices.Equal(got, []string{"legacy"}) {
		t.Errorf("b lists %v, want [legacy]", got)
	}
	if err := eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
		t.Error(err)
	}
}

// TestLabelsCannotBeTheRuntimes: Options.Labels may not name a label the
// runtime sets itself.
func TestLabelsCannotBeTheRuntimes(t *testing.T) {
	for _, k := range []string{agent.LabelNode, agent.LabelManaged, agent.LabelSpec, ""} {
		_, err := docker.New(docker.Options{Node: "n1", Labels: map[string]string{k: "x"}})
		if !errors.Is(err, agent.ErrInvalid) {
			t.Errorf("label %q: %v, want ErrInvalid", k, err)
		}
	}
	if _, err := docker.New(docker.Options{Node: "n1", Labels: map[string]string{agent.LabelData: "x"}}); err != nil {
		t.Errorf("label %s: %v", agent.LabelData, err)
	}
}

// TestOtherMeshSameNamesRefused: two meshes' nodes of one name on one
// engine, under one prefix (two data directories whose agents were given
// the same --docker-prefix): the second's container, network and volume
// are refused, each naming the first's data label, and the first's are
// untouched (not joined, not mounted, not removed); a second pass of the
// second fails the same, creating and removing nothing: no churn.
func TestOtherMeshSameNamesRefused(t *testing.T) {
	setup(t)
	node := randomNode(t)
	a := newRTFor(t, node, node+"-", t.TempDir(), eng, withLabels(map[string]string{agent.LabelData: "aaaa"}))
	b := newRTFor(t, node, node+"-", t.TempDir(), eng, withLabels(map[string]string{agent.LabelData: "bbbb"}))
	agA, agB := newAgent(t, a, node), newAgent(t, b, node)

	bare := web("/srv/forge")
	bare.Networks, bare.Mounts = nil, nil
	net := web("/srv/forge")
	net.Mounts = nil // the network "mesh" alone
	// web mounts the volume "cache" (met first) and joins "mesh".
	d := decl(node, "1", hosts1, append(forge("/srv/forge"), ctrRes("bare", "forge", bare), ctrRes("net", "forge", net))...)
	if o := apply(t, agA, d); len(o.Failed) != 0 {
		t.Fatalf("a's apply failed: %+v", o.Failed)
	}
	ids := map[string]string{}
	for _, c := range []string{"web", "bare", "net"} {
		ids[c] = a.inspect(t, c).ID
	}

	for pass := 1; pass <= 2; pass++ {
		o := apply(t, agB, d)
		// b's own directory and file (under its own root) are made once;
		// no container, and nothing on a second pass.
		created := slices.DeleteFunc(slices.Clone(o.Created), func(s string) bool { return pass == 1 && strings.HasPrefix(s, "forge-") })
		if len(created)+len(o.Replaced)+len(o.Removed) != 0 {
			t.Errorf("b's pass %d created %v, replaced %v, removed %v: want no container, nothing the second time", pass, o.Created, o.Replaced, o.Removed)
		}
		failed := map[string]string{}
		for _, f := range o.Failed {
			failed[f.Name] = f.Error
		}
		for c, kind := range map[string]string{"web": "volume " + node + "-cache", "bare": "container " + node + "-bare", "net": "network " + node + "-mesh"} {
			want := "the engine's " + kind + " is another mesh's (meshplane.data=aaaa, node " + node + ")"
			if !strings.Contains(failed[c], want) {
				t.Errorf("b's pass %d: %s failed with %q; want it to say %q", pass, c, failed[c], want)
			}
		}
	}
	for c, id := range ids {
		if in := a.inspect(t, c); in.ID != id || !in.State.Running {
			t.Errorf("a's %s: id %s running %v, want %s running, untouched", c, in.ID, in.State.Running, id)
		}
	}
}
