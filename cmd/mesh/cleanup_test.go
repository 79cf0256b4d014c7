package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/agent"
	"meshplane/artifacts/imagebuild"
	"meshplane/meshup"
)

// checkCleanup, after `mesh up --once` on the local example (node on the
// engine, its output out, data its data directory): what up made there
// carries the data directory's id, and the clean-up up printed, run as
// printed, removes this data directory's containers, networks and images
// and nothing of another data directory's on the same engine, even of a
// node of the same name.
func checkCleanup(t *testing.T, eng *client.Client, node, data, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := os.ReadFile(filepath.Join(data, meshup.DataIDFile))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(b))
	mine := filters.NewArgs(filters.Arg("label", agent.LabelNode+"="+node), filters.Arg("label", agent.LabelData+"="+id))
	ours := filters.NewArgs(filters.Arg("label", agent.LabelData+"="+id))
	count := func(what string, f filters.Args) int {
		t.Helper()
		var n int
		var err error
		switch what {
		case "containers":
			var cs []container.Summary
			cs, err = eng.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
			n = len(cs)
		case "networks":
			var ns []network.Summary
			ns, err = eng.NetworkList(ctx, network.ListOptions{Filters: f})
			n = len(ns)
		case "images":
			var is []image.Summary
			is, err = eng.ImageList(ctx, image.ListOptions{All: true, Filters: f})
			n = len(is)
		}
		if err != nil {
			t.Fatalf("list %s: %v", what, err)
		}
		return n
	}
	// (The example's module joins no network; the agent labels its
	// networks as it does its containers: agent/docker's tests.)
	if count("containers", mine) == 0 {
		t.Fatalf("no container labelled %s=%s and %s=%s: up's agent does not label with the data directory", agent.LabelNode, node, agent.LabelData, id)
	}
	if count("images", ours) == 0 {
		t.Fatalf("no image labelled %s=%s: up does not label its builds with the data directory", agent.LabelData, id)
	}

	// Another data directory's, on the same engine, with a node of the same
	// name: a container, its network, and an image of the same program
	// that nothing uses.
	rb := make([]byte, 8)
	if _, err := rand.Read(rb); err != nil {
		t.Fatal(err)
	}
	other := hex.EncodeToString(rb)
	theirs := filters.NewArgs(filters.Arg("label", agent.LabelData+"="+other))
	img, err := imagebuild.Program(ctx, "meshplane/cmd/mesh-demo", imagebuild.Options{Labels: map[string]string{agent.LabelData: other}})
	if err != nil {
		t.Fatal(err)
	}
	unused, err := relabel(img, map[string]string{"meshplane.test": "unused"})
	if err != nil {
		t.Fatal(err)
	}
	repo := "meshplane-test-other-" + other
	for tag, im := range map[string]v1.Image{"used": img, "unused": unused} {
		ref, _ := name.NewTag(repo + ":" + tag)
		var buf bytes.Buffer
		if err := tarball.Write(ref, im, &buf); err != nil {
			t.Fatal(err)
		}
		resp, err := eng.ImageLoad(ctx, &buf, client.ImageLoadWithQuiet(true))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	labels := map[string]string{agent.LabelManaged: "true", agent.LabelNode: node, agent.LabelData: other, agent.LabelResource: "web"}
	nw, err := eng.NetworkCreate(ctx, node+"-"+other, network.CreateOptions{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	c, err := eng.ContainerCreate(ctx, &container.Config{Image: repo + ":used", Labels: labels}, nil, nil, nil, node+"-web-"+other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		_ = eng.NetworkRemove(ctx, nw.ID)
		for _, tag := range []string{"used", "unused"} {
			_, _ = eng.ImageRemove(ctx, repo+":"+tag, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	})

	// The clean-up, as printed: each line's commands, before its note.
	_, after, ok := strings.Cut(out, "on the Docker engine")
	if !ok {
		t.Fatalf("up printed no clean-up:\n%s", out)
	}
	var ran int
	for _, l := range strings.Split(after, "\n") {
		cmds, _, _ := strings.Cut(strings.TrimSpace(l), "    (")
		if !strings.HasPrefix(cmds, "docker ") || strings.HasPrefix(cmds, "docker ps ") {
			continue // the note, or the listing
		}
		sh := exec.CommandContext(ctx, "sh", "-c", cmds)
		if b, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("the clean-up %q: %v\n%s", cmds, err, b)
		}
		ran++
	}
	if ran != 2 {
		t.Fatalf("ran %d clean-up lines, want 2 (the node's, the images'):\n%s", ran, after)
	}
	for _, what := range []string{"containers", "networks"} {
		if n := count(what, mine); n != 0 {
			t.Errorf("%d of this data directory's %s left after its clean-up", n, what)
		}
		if n := count(what, theirs); n != 1 {
			t.Errorf("the other data directory's %s: %d left, want 1: the clean-up touched them", what, n)
		}
	}
	if n := count("images", ours); n != 0 {
		t.Errorf("%d of this data directory's images left after its clean-up", n)
	}
	if n := count("images", theirs); n != 2 {
		t.Errorf("the other data directory's images: %d left, want 2 (one in use, one not): the clean-up touched them", n)
	}
}

// relabel is img with more labels in its config.
func relabel(img v1.Image, more map[string]string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	for k, v := range more {
		cf.Config.Labels[k] = v
	}
	return mutate.ConfigFile(img, cf)
}
