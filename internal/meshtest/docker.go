package meshtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"meshplane/agent/docker"
)

func RandomNodeName(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "l" + hex.EncodeToString(b)
}

// NeedEngine fails the test under CI=true when no Docker engine answers a
// ping, and elsewhere skips it, loudly. A socket file alone proves nothing:
// a stopped dockerd leaves it behind.
func NeedEngine(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := docker.Reachable(ctx)
	cancel()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Docker engine under CI: %v", err)
		}
		t.Skipf("SKIPPED: %v (run scripts/ensure-docker.sh as root)", err)
	}
}

// RemoveNode removes what the test's node made on the engine, as the
// cleanup up prints does, and the image it pulled.
func RemoveNode(t *testing.T, eng *client.Client, byNode filters.Args, storeAt string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: byNode})
	if err != nil {
		t.Logf("cleanup: %v", err)
	}
	for _, c := range cs {
		if err := eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Logf("cleanup: remove %s: %v", c.ID, err)
		}
	}
	if _, err := eng.NetworksPrune(ctx, byNode); err != nil {
		t.Logf("cleanup: networks: %v", err)
	}
	imgs, _ := eng.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", storeAt+"/*/*"))})
	for _, im := range imgs {
		for _, ref := range im.RepoDigests {
			if strings.HasPrefix(ref, storeAt+"/") {
				_, _ = eng.ImageRemove(ctx, ref, image.RemoveOptions{})
			}
		}
	}
}
