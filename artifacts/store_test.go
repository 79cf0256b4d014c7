package artifacts_test

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/artifacts"
)

func serve(t *testing.T, dir string) string {
	t.Helper()
	h, err := artifacts.NewHandler(dir)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestPushSurvivesRestart: an image pushed from a tarball is served by
// digest, and still is by a store reopened over the same directory.
func TestPushSurvivesRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "web.tar")
	tag, _ := name.NewTag("forge/web:build")
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		t.Fatal(err)
	}
	addr := serve(t, dir)
	digest, err := artifacts.Push(ctx, addr, "forge/web", tarPath)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
		t.Fatalf("push returned digest %q", digest)
	}
	for i, a := range []string{addr, serve(t, dir)} { // the same store, then a reopened one
		ref, err := name.NewDigest(a+"/forge/web@"+digest, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(ref, remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("store %d: pull by digest: %v", i, err)
		}
		if gd, _ := got.Digest(); gd.String() != digest {
			t.Fatalf("store %d: pulled %s, pushed %s", i, gd, digest)
		}
		layers, err := got.Layers()
		if err != nil || len(layers) != 2 {
			t.Fatalf("store %d: %d layers (%v), want 2", i, len(layers), err)
		}
		for _, l := range layers {
			rc, err := l.Compressed()
			if err != nil {
				t.Fatalf("store %d: layer: %v", i, err)
			}
			rc.Close()
		}
	}
}

func TestPushRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := serve(t, t.TempDir())
	notTar := filepath.Join(t.TempDir(), "x.tar")
	if err := os.WriteFile(notTar, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, addr, repo, path, want string }{
		{"missing file", addr, "forge/web", "/nonexistent.tar", "read image tarball"},
		{"not a tarball", addr, "forge/web", notTar, "read image tarball"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := artifacts.Push(ctx, tt.addr, tt.repo, tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("push: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestUndecodableManifestRefusesToOpen: a store does not serve half of what
// it holds.
func TestUndecodableManifestRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	if _, err := artifacts.NewHandler(dir); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "manifests", "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := artifacts.NewHandler(dir); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("open over an undecodable manifest: %v, want an error naming it", err)
	}
}

func TestServeStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- artifacts.Serve(ctx, "127.0.0.1:0", t.TempDir()) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop with its context")
	}
}

// TestServeStopsPastAnUnusedConnection: a client's transport may dial a
// connection it never sends on (CI saw it in `mesh up`'s staging). The
// store stops at once all the same, without waiting the five seconds
// http.Server.Shutdown gives such a connection.
func TestServeStopsPastAnUnusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h, err := artifacts.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- artifacts.ServeOn(ctx, ln, h) }()
	if err := artifacts.Ready(context.Background(), ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The server has the connection once it answers a request dialed after it.
	if err := artifacts.Ready(context.Background(), ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after cancel: %v", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("serve took %v to stop past a connection that sent nothing", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop with its context")
	}
}

// TestReadyWaitsForTheStore: Ready waits through a store not yet
// listening, then PushImage uploads an image to it by digest.
func TestReadyWaitsForTheStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there yet
	ready := make(chan error, 1)
	go func() { ready <- artifacts.Ready(ctx, addr) }()

	h, err := artifacts.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			served <- err
			return
		}
		served <- artifacts.ServeOn(sctx, ln, h)
	}()
	if err := <-ready; err != nil {
		t.Fatalf("ready: %v", err)
	}
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := artifacts.PushImage(ctx, addr, "demo/web", img)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if want, _ := img.Digest(); digest != want.String() {
		t.Errorf("push returned %s, want the image's digest %s", digest, want)
	}
	stop()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}

	// Nothing answers: Ready gives up with its context, saying so.
	gone, cancelGone := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelGone()
	if err := artifacts.Ready(gone, addr); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("ready with nothing listening: %v, want it to say the store did not answer", err)
	}
}
