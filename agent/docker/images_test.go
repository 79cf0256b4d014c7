package docker_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/artifacts"
	"meshplane/declaration"
)

// TestUnpullableImageLeavesTheOldContainerRunning (issue 34, section 4):
// redefining a container with an image the artifact store does not have
// fails the resource naming the image, and the container it would have
// replaced is still the same one, running; before, it was removed first
// and the service was down until a revert.
func TestUnpullableImageLeavesTheOldContainerRunning(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	old := declaration.Container{Image: testRef, Command: []string{"serve", "--port", "3000"}}
	if o := apply(t, ag, decl(r.node, "1", hosts1, ctrRes("web", "forge", old))); len(o.Failed) > 0 {
		t.Fatalf("first apply: %+v", o.Failed)
	}
	before := r.inspect(t, "web")

	at, _, _ := strings.Cut(testRef, "/")
	ghost := at + "/forge/ghost@sha256:" + strings.Repeat("0", 64)
	next := old
	next.Image = ghost
	o := apply(t, ag, decl(r.node, "2", hosts1, ctrRes("web", "forge", next)))
	if len(o.Failed) != 1 || o.Failed[0].Name != "web" || !strings.Contains(o.Failed[0].Error, ghost) {
		t.Fatalf("failed %+v, want web failed naming %s", o.Failed, ghost)
	}
	after := r.inspect(t, "web")
	if after.ID != before.ID || after.State == nil || !after.State.Running {
		t.Fatalf("web after a failed pull: id %s (was %s), state %+v: want the old container, running", after.ID, before.ID, after.State)
	}
}

// TestDryRunSaysWhetherImagesCanBePulled: a dry run on the engine says
// which images the engine holds, which its registry has (pushed under
// another name: not held), and which cannot be had, and pulls nothing.
func TestDryRunSaysWhetherImagesCanBePulled(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r, r.node)
	at, digest, _ := strings.Cut(testRef, "@")
	addr, _, _ := strings.Cut(at, "/")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := artifacts.Push(ctx, addr, "forge/"+r.node, filepath.Join(storeDir, "meshtest.tar")); err != nil {
		t.Fatal(err)
	}
	pullable := addr + "/forge/" + r.node + "@" + digest
	ghost := addr + "/forge/ghost@sha256:" + strings.Repeat("0", 64)
	d := decl(r.node, "1", hosts1,
		ctrRes("a", "forge", declaration.Container{Image: testRef}),
		ctrRes("b", "forge", declaration.Container{Image: pullable}),
		ctrRes("c", "forge", declaration.Container{Image: ghost}))
	pv, err := ag.DryRun(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{testRef: agent.ImagePresent, pullable: agent.ImagePullable, ghost: agent.ImageUnavailable}
	got := map[string]string{}
	for _, ic := range pv.Images {
		got[ic.Image] = ic.State
		if ic.State == agent.ImageUnavailable && ic.Detail == "" {
			t.Errorf("%s unavailable without saying why", ic.Image)
		}
	}
	for img, st := range want {
		if got[img] != st {
			t.Errorf("%s: %q, want %q (all: %+v)", img, got[img], st, pv.Images)
		}
	}
	if _, err := eng.ImageInspect(ctx, pullable); err == nil {
		t.Errorf("the dry run pulled %s", pullable)
	}
}
