package main

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"meshplane/artifacts"
)

// imageTarball writes a one-layer image, the same bytes every run, as
// docker save would, and returns its path.
func imageTarball(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("#!/bin/sh\necho web\n")
	if err := tw.WriteHeader(&tar.Header{Name: "web", Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "web.tar")
	tag, _ := name.NewTag("forge/web:build")
	if err := tarball.WriteToFile(p, tag, img); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestArtifactPush(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	h, err := artifacts.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	port := addr[strings.LastIndex(addr, ":")+1:]
	other := httptest.NewServer(h) // the same store, at another address, for --registry
	defer other.Close()
	otherAddr := strings.TrimPrefix(other.URL, "http://")

	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "forge.yaml")
	if err := os.WriteFile(file, []byte("module: forge\ncontainers:\n  - {name: web, artifact: forge/web}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := imageTarball(t)
	var out strings.Builder
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string // in stdout, or stderr when the code is not exitOK
	}{
		{"no store yet", []string{"node", "register", "a"}, exitOK, "node-a"},
		{"define", []string{"module", "define", file}, exitOK, "module.defined"},
		{"no node holds a store", []string{"artifact", "push", "forge", "forge/web", img}, exitFailed, "no node holds the artifact store"},
		{"hold the store", []string{"node", "set", "a", "artifact-store", port}, exitOK, "node.setting-set"},
		{"undefined module", []string{"artifact", "push", "photos", "photos/web", img}, exitRejected, "module photos is not defined"},
		{"not a tarball", []string{"artifact", "push", "forge", "forge/web", file}, exitFailed, "read image tarball"},
		{"push by loopback", []string{"artifact", "push", "forge", "forge/web", img}, exitOK, "artifact.recorded"},
		{"push again: nothing to record", []string{"artifact", "push", "forge", "forge/web", img}, exitOK, "is already recorded, nothing to do"},
		{"--registry", []string{"artifact", "push", "--registry", otherAddr, "forge", "forge/api", img}, exitOK, "artifact.recorded"},
		{"usage", []string{"artifact", "push", "forge"}, exitUsage, "want MODULE NAME IMAGE.tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := mesh(t, append(tc.args, "--data", dir)...)
			got := stdout
			if tc.code != exitOK {
				got = stderr
			}
			if code != tc.code || !strings.Contains(got, tc.says) {
				t.Fatalf("mesh %v: exit %d, want %d saying %q\n%s%s", tc.args, code, tc.code, tc.says, stdout, stderr)
			}
			if code == exitOK && tc.args[0] == "artifact" {
				out.WriteString(stdout)
			}
		})
	}
	got := strings.ReplaceAll(strings.ReplaceAll(out.String(), otherAddr, "OTHER"), addr, "127.0.0.1:PORT")
	got = strings.ReplaceAll(got, img, "IMAGE.tar")
	golden(t, "artifact-push", got, dir)

	// The record names module, name and digest, never an address (rule 6).
	_, tl, _ := mesh(t, "timeline", "--data", dir, "--type", "artifact.recorded", "--json")
	if strings.Count(tl, "sha256:") != 2 || strings.Contains(tl, "127.0.0.1") {
		t.Fatalf("artifact.recorded events:\n%s\nwant two, with digests and no address", tl)
	}
	// Against a controller: --registry is required (the API does not say
	// where the store is), and the record goes through the controller, as
	// it does from a store the controller holds.
	ctl := startServer(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no --registry", append([]string{"artifact", "push", "forge", "forge/cli", img}, ctl.flags()...), exitUsage, "give --registry"},
		{"--server", append([]string{"artifact", "push", "--registry", addr, "forge", "forge/cli", img}, ctl.flags()...), exitOK, "module-forge #"},
		{"a locked store", []string{"artifact", "push", "--data", dir, "--registry", addr, "forge", "forge/cli", img}, exitFailed, "locked"},
		{"undefined module", append([]string{"artifact", "push", "--registry", addr, "photos", "photos/web", img}, ctl.flags()...), exitRejected, "module photos is not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := mesh(t, tc.args...)
			got := stdout
			if tc.code != exitOK {
				got = stderr
			}
			if code != tc.code || !strings.Contains(got, tc.says) {
				t.Fatalf("mesh %v: exit %d, want %d saying %q\n%s%s", tc.args, code, tc.code, tc.says, stdout, stderr)
			}
		})
	}
}

// TestArtifactPushBeyondGenesis: loopback is rule 6's one case, a first
// node mid-genesis. Once a second node is registered, a store node with no
// private address is refused (saying what to give), not pushed to by
// loopback; given one, the push goes there.
func TestArtifactPushBeyondGenesis(t *testing.T) {
	t.Setenv("MESH_OPERATOR", "test")
	h, err := artifacts.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	port := addr[strings.LastIndex(addr, ":")+1:]
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "forge.yaml")
	if err := os.WriteFile(file, []byte("module: forge\ncontainers:\n  - {name: web, artifact: forge/web}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := imageTarball(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"two nodes", []string{"node", "register", "a", "b"}, exitOK, "node-b"},
		{"define", []string{"module", "define", file}, exitOK, "module.defined"},
		{"hold the store", []string{"node", "set", "a", "artifact-store", port}, exitOK, "node.setting-set"},
		{"no loopback beyond genesis", []string{"artifact", "push", "forge", "forge/web", img}, exitFailed, "the artifact store on a: the artifact store has no private address to reach it by"},
		{"it says what to give", []string{"artifact", "push", "forge", "forge/web", img}, exitFailed, "--registry HOST:PORT"},
		{"give it an address", []string{"node", "set", "a", "private-address", "127.0.0.1"}, exitOK, "node.setting-set"},
		{"pushed there", []string{"artifact", "push", "forge", "forge/web", img}, exitOK, "to " + addr + "/forge/web@sha256:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := mesh(t, append(tc.args, "--data", dir)...)
			got := stdout
			if tc.code != exitOK {
				got = stderr
			}
			if code != tc.code || !strings.Contains(got, tc.says) {
				t.Fatalf("mesh %v: exit %d, want %d saying %q\n%s%s", tc.args, code, tc.code, tc.says, stdout, stderr)
			}
		})
	}
}
